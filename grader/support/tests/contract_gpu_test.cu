// grader::require_contract_kept on a real GPU: it runs the call twice and holds the second run to
// the contract, so an event the first call makes and keeps is not taken for one that every call
// leaves behind. Skipped without a GPU. (A call that breaks its contract fails the test it runs
// in, so the failing side is contract_test.cpp's, on made-up traces.)
#include "contract.hpp"
#include "grader.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>

#include <optional>

namespace {

__global__ void mark_kernel(float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) x[i] = 1.0f;
}

}  // namespace

TEST_CASE("require_contract_kept holds the second call: an event made once and kept is no leak", "[contract][gpu]") {
  grader::require_gpu();
  workbook::DeviceBuffer<float> x(1000);
  workbook::Stream stream(cudaStreamNonBlocking);
  std::optional<workbook::Event> done;  // made by the first call, kept for every later one
  int calls = 0;
  const grader::ContractCall call{"mark(x, 1000, stream)", {stream.get()}, {}, {}};
  grader::require_contract_kept(grader::given_stream_contract("mark"), call, [&] {
    ++calls;
    if (!done) done.emplace(cudaEventDisableTiming);
    mark_kernel<<<4, 256, 0, stream.get()>>>(x.data(), 1000);
    WORKBOOK_CHECK_LAUNCH();
    done->record(stream.get());
  });
  CHECK(calls == 2);
}
