// Lesson 04: reductions. Read lessons/04_reduction/README.md first.
//
// Fill in the TODOs; each is one task of the lesson (task 4 is an optional challenge).
// Grade your work with
//     ./grade 04
// and find races in your trees with
//     ./grade --sanitize 04
// Untouched, this file compiles and every task is graded "not implemented yet".
#include "reduction.hpp"

#include "workbook/workbook.hpp"

#include <cub/device/device_reduce.cuh>

#include <stdexcept>
#include <string>

__global__ void reduce_block(const float* in, std::size_t n, float* block_sums) {
  // TODO(task 1): block b writes to block_sums[b] the sum of its blockDim.x elements of `in` (those below
  // n), reducing them as a tree in dynamic shared memory (blockDim.x floats, given at launch). Any
  // power-of-two block from 32 to 1024 must work, and so must a last block that is only partly inside
  // the array; nothing past in[n - 1] is read. The grader reruns it on fresh data to catch races, and
  // ./grade --sanitize 04 runs racecheck. Lesson sections: "The tree in a block", "The last 32 values:
  // warp shuffles".
  (void)in, (void)n, (void)block_sums;
}

void reduce_sum(const float* in, std::size_t n, float* out, void* workspace, std::size_t workspace_bytes,
                cudaStream_t stream) {
  // TODO(task 2): *out = the sum of in[0 .. n-1], with kernels you write above this function (no CUB).
  // Right on every call, whatever *out and the workspace hold when it begins (the grader starts *out as
  // NaN, the workspace as garbage, and calls again without resetting them); `in` need not be 16-byte
  // aligned; n = 0 gives 0. Everything on `stream`; returns without waiting. Timed at 2^26 and 2^28
  // floats against cub::DeviceReduce::Sum (45%). Choose how blocks combine their sums and say why in a
  // comment. Lesson sections: "More work per thread", "Combining the block partials".
  (void)in, (void)n, (void)out, (void)workspace, (void)workspace_bytes, (void)stream;
}

void norm_l2_cub(const float* in, std::size_t n, float* out, void* workspace, std::size_t workspace_bytes,
                 cudaStream_t stream) {
  // TODO(task 3): *out = sqrt(sum of in[i]^2), computed by CUB alone: no kernel of your own, the square
  // root included. CUB's temporary storage comes from `workspace`; throw std::runtime_error when it does
  // not fit or when CUB returns an error. On `stream`, without waiting; n = 0 gives 0. Timed at 2^26 and
  // 2^28 floats against cub::DeviceReduce::Sum (90%). Lesson section: "CUB: the library".
  (void)in, (void)n, (void)out, (void)workspace, (void)workspace_bytes, (void)stream;
}

void reduce_sum_challenge(const float* in, std::size_t n, float* out, void* workspace, std::size_t workspace_bytes,
                          cudaStream_t stream) {
  // TODO(task 4): optional challenge. reduce_sum again, as fast as CUB (97% of cub::DeviceReduce::Sum)
  // at 2^26 and 2^28 floats, with your own kernels only; any n and any alignment of `in` (it need not
  // start on a 16-byte boundary). Lesson sections: "More work per thread", "Task 4".
  (void)in, (void)n, (void)out, (void)workspace, (void)workspace_bytes, (void)stream;
}
