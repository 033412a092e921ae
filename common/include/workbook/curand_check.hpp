/// \file
/// Error checking for cuRAND's host API (lesson 07): a call that does not return
/// CURAND_STATUS_SUCCESS throws workbook::CurandError naming the call, the file, the line and the
/// status. cuRAND reports through its own curandStatus_t, not cudaError_t, so WORKBOOK_CUDA_CHECK
/// cannot check it. Header-only: include it where you call cuRAND (it needs curand.h, which the
/// rest of the workbook does not).
#pragma once

#include <curand.h>

#include <stdexcept>
#include <string>

namespace workbook {

/// The name of a cuRAND status, as curand.h spells it: "CURAND_STATUS_LENGTH_NOT_MULTIPLE".
inline const char* curand_status_name(curandStatus_t status) {
  switch (status) {
    case CURAND_STATUS_SUCCESS: return "CURAND_STATUS_SUCCESS";
    case CURAND_STATUS_VERSION_MISMATCH: return "CURAND_STATUS_VERSION_MISMATCH";
    case CURAND_STATUS_NOT_INITIALIZED: return "CURAND_STATUS_NOT_INITIALIZED";
    case CURAND_STATUS_ALLOCATION_FAILED: return "CURAND_STATUS_ALLOCATION_FAILED";
    case CURAND_STATUS_TYPE_ERROR: return "CURAND_STATUS_TYPE_ERROR";
    case CURAND_STATUS_OUT_OF_RANGE: return "CURAND_STATUS_OUT_OF_RANGE";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "CURAND_STATUS_LENGTH_NOT_MULTIPLE (normal and log-normal values come in pairs: ask for an even count)";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case CURAND_STATUS_LAUNCH_FAILURE: return "CURAND_STATUS_LAUNCH_FAILURE";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "CURAND_STATUS_PREEXISTING_FAILURE";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "CURAND_STATUS_INITIALIZATION_FAILED";
    case CURAND_STATUS_ARCH_MISMATCH: return "CURAND_STATUS_ARCH_MISMATCH";
    case CURAND_STATUS_INTERNAL_ERROR: return "CURAND_STATUS_INTERNAL_ERROR";
  }
  return "an unknown cuRAND status";
}

/// A failed cuRAND host-API call. what() reads like "monte_carlo.cu:57:
/// curandGenerateNormal(gen, v, 3, 0.0f, 1.0f) failed: CURAND_STATUS_LENGTH_NOT_MULTIPLE (...)".
class CurandError : public std::runtime_error {
public:
  /// Builds the message from the status, the call's source text and where it was made.
  CurandError(curandStatus_t status, const char* call, const char* file, int line)
      : std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                           curand_status_name(status)),
        status_(status) {}
  /// The cuRAND status, e.g. CURAND_STATUS_LENGTH_NOT_MULTIPLE.
  curandStatus_t status() const noexcept { return status_; }

private:
  curandStatus_t status_;
};

/// Throws CurandError when \p status is not CURAND_STATUS_SUCCESS. Use through WORKBOOK_CURAND_CHECK.
inline void curand_check(curandStatus_t status, const char* call, const char* file, int line) {
  if (status != CURAND_STATUS_SUCCESS) throw CurandError(status, call, file, line);
}

}  // namespace workbook

/// Runs a cuRAND host-API call and throws workbook::CurandError if it fails.
#define WORKBOOK_CURAND_CHECK(call) ::workbook::curand_check((call), #call, __FILE__, __LINE__)
