// Lesson 04's yardstick, declared with its benchmark (benchmark.hpp) but apart from it, so that
// only the files that time it compile CUB's headers: reduction_grader.cu and ./sweep 04's
// program (tools/bench/04_reduction.cu).
#pragma once

#include "workbook/workbook.hpp"

#include <cub/device/device_reduce.cuh>

#include <cstddef>

namespace reduction_benchmark {

// cub::DeviceReduce::Sum of up to \p largest floats, its temporary storage allocated once, outside
// the timings: a program that sums often keeps it (CuPy's memory pool does).
class CubSum {
 public:
  explicit CubSum(std::size_t largest) { reserve(largest); }
  // Grows the storage to what a sum of \p n floats needs.
  void reserve(std::size_t n) {
    std::size_t bytes = 0;
    WORKBOOK_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, static_cast<const float*>(nullptr),
                                               static_cast<float*>(nullptr), n));
    if (bytes > bytes_) {
      bytes_ = bytes;
      storage_ = workbook::DeviceBuffer<unsigned char>(bytes_);
    }
  }
  // *out = in[0] + ... + in[n - 1], enqueued on \p stream; a size reserve() did not make room for
  // throws workbook::CudaError.
  void operator()(const float* in, std::size_t n, float* out, cudaStream_t stream) {
    std::size_t bytes = bytes_;
    WORKBOOK_CUDA_CHECK(cub::DeviceReduce::Sum(storage_.data(), bytes, in, out, n, stream));
  }

 private:
  std::size_t bytes_ = 0;
  workbook::DeviceBuffer<unsigned char> storage_;
};

}  // namespace reduction_benchmark
