// Error checking: the message format every CUDA failure in the workbook shares.
#include "workbook/cuda_check.hpp"

#include <cstdio>
#include <string>

namespace workbook {
namespace {

std::string base_name(const char* path) {
  std::string p = path;
  const auto slash = p.find_last_of("/\\");
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string message(cudaError_t code, const char* call, const char* file, int line) {
  return base_name(file) + ":" + std::to_string(line) + ": " + call + " failed: " + cudaGetErrorName(code) + " (" +
         cudaGetErrorString(code) + ")";
}

}  // namespace

CudaError::CudaError(cudaError_t code, const char* call, const char* file, int line)
    : std::runtime_error(message(code, call, file, line)), code_(code) {}

void cuda_check(cudaError_t code, const char* call, const char* file, int line) {
  if (code != cudaSuccess) throw CudaError(code, call, file, line);
}

bool cuda_check_noexcept(cudaError_t code, const char* call, const char* file, int line) noexcept {
  if (code == cudaSuccess) return true;
  std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", base_name(file).c_str(), line, call, cudaGetErrorName(code),
               cudaGetErrorString(code));
  return false;
}

void check_last_launch(const char* file, int line) {
  cuda_check(cudaGetLastError(), "kernel launch", file, line);
}

}  // namespace workbook
