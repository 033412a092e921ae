// CudaError: the message names the call, the file, the line and the error.
#include "workbook/cuda_check.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

using Catch::Matchers::ContainsSubstring;

TEST_CASE("a failed call throws CudaError naming call and file and line and error", "[cuda_check]") {
  try {
    WORKBOOK_CUDA_CHECK(cudaErrorInvalidConfiguration);
    FAIL("no exception");
  } catch (const workbook::CudaError& e) {
    CHECK(e.code() == cudaErrorInvalidConfiguration);
    const std::string what = e.what();
    CHECK_THAT(what, ContainsSubstring("cuda_check_test.cpp:"));
    CHECK_THAT(what, ContainsSubstring("cudaErrorInvalidConfiguration failed"));
    CHECK_THAT(what, ContainsSubstring("cudaErrorInvalidConfiguration (invalid configuration argument)"));
  }
}

TEST_CASE("success does not throw", "[cuda_check]") { CHECK_NOTHROW(WORKBOOK_CUDA_CHECK(cudaSuccess)); }

TEST_CASE("the noexcept variant reports instead of throwing", "[cuda_check]") {
  CHECK(workbook::cuda_check_noexcept(cudaSuccess, "ok", __FILE__, __LINE__));
  CHECK_FALSE(workbook::cuda_check_noexcept(cudaErrorMemoryAllocation, "cudaMalloc", __FILE__, __LINE__));
}
