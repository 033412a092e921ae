// Lesson 05: streams. Read lessons/05_streams/README.md first.
//
// The kernels are given (streams::transform and streams::smooth, in streams.hpp): every task
// here is about where and when work runs. Fill in the TODOs; task 4 is an optional challenge.
// Grade your work with
//     ./grade 05
// and draw your pipeline's timeline with
//     ./sweep 05 && ./plot sweep-results/05_streams.csv
// Untouched, this file compiles and every task is graded "not implemented yet".
#include "streams.hpp"

#include "workbook/workbook.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace streams {

void process(const float* host_in, float* host_out, float* device_in, float* device_out, std::size_t n, int work,
             int num_streams, int num_chunks) {
  // TODO(task 1): host_out = transform(host_in) through the GPU, cut into num_chunks chunks spread
  // over num_streams streams of your own, so that one chunk's copies overlap another chunk's kernel.
  // Any n, num_streams and num_chunks >= 1 (more chunks than elements too); every element exactly
  // once; fewer than one stream or chunk is reported as std::invalid_argument. Return once host_out
  // is complete, having waited for your own streams only: the caller may have work of its own running
  // on the GPU. The grader times it against the bound max(kernel, copies in and out at once). Lesson
  // sections: "Streams", "Copy engines and the overlap bound", "Task 1".
  (void)host_in, (void)host_out, (void)device_in, (void)device_out, (void)n, (void)work, (void)num_streams,
      (void)num_chunks;
}

void compute_then_copy(const float* device_in, float* device_out, float* host_out, std::size_t n, int work,
                       cudaStream_t compute, cudaStream_t copy) {
  // TODO(task 2): transform device_in into device_out on `compute`, then copy device_out to
  // host_out on `copy`. The copy must not start before the kernel ends, and the host must not
  // wait for either: return while the GPU is still busy. Lesson section: "Events: ordering
  // streams without the host".
  (void)device_in, (void)device_out, (void)host_out, (void)n, (void)work, (void)compute, (void)copy;
}

void transform_batches(const float* device_in, float* device_out, const std::size_t* offsets, int num_batches,
                       int work, cudaStream_t stream) {
  // TODO(task 3): for each batch, device_out = smooth(transform(device_in)) over that batch alone,
  // through a temporary device buffer the size of the batch (smooth reads neighbours, so it
  // cannot work in place). The temporaries come and go in stream order on `stream`: no call that
  // waits for the GPU, no synchronous cudaMalloc or cudaFree, nothing left allocated. The grader
  // times it against a loop that calls cudaMalloc and cudaFree for each batch. Lesson section:
  // "Stream-ordered allocation and memory pools".
  (void)device_in, (void)device_out, (void)offsets, (void)num_batches, (void)work, (void)stream;
}

void process_pageable(const float* host_in, float* host_out, float* device_in, float* device_out, std::size_t n,
                      int work, float* staging, std::size_t staging_floats) {
  // TODO(task 4): optional challenge. Task 1's result when host_in and host_out are pageable
  // memory, with the copies still overlapping the kernels: stage the chunks through the pinned
  // `staging` buffer (staging_floats floats) used as a ring, and let events tell the host when a
  // slot may be reused. Wait only on your own streams and events. The grader times it against
  // the sequential version (cudaMemcpy in, kernel, cudaMemcpy out). Lesson section: "Task 4".
  (void)host_in, (void)host_out, (void)device_in, (void)device_out, (void)n, (void)work, (void)staging,
      (void)staging_floats;
}

}  // namespace streams
