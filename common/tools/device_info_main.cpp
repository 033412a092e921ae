// workbook_device_info: the GPU's properties as one JSON object, for the grader and for
// students' reports. With --measure-copy it adds the measured device-to-device copy
// bandwidth, the ceiling memory-bound kernels are graded against.
// Exit codes: 0 fine, 3 no usable GPU (one sentence on stderr), 1 anything else.
#include "workbook/device_info.hpp"

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  bool measure = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--measure-copy") == 0) {
      measure = true;
    } else {
      std::fprintf(stderr, "usage: %s [--measure-copy]\n", argv[0]);
      return 2;
    }
  }
  if (workbook::cuda_device_count() == 0) {
    std::fprintf(stderr, "No GPU to run on: %s.\n", workbook::no_gpu_reason().c_str());
    return 3;
  }
  try {
    const workbook::DeviceInfo info = workbook::query_device(0);
    std::printf("{\"name\": %s, \"compute_capability\": \"%d.%d\", \"sm_count\": %d, \"max_threads_per_block\": %d, "
                "\"max_threads_per_sm\": %d, \"total_memory_bytes\": %zu, \"free_memory_bytes\": %zu, "
                "\"l2_cache_bytes\": %d, \"theoretical_bandwidth_gbps\": %.1f",
                json_string(info.name).c_str(), info.cc_major, info.cc_minor, info.sm_count,
                info.max_threads_per_block, info.max_threads_per_sm, info.total_memory_bytes,
                info.free_memory_bytes, info.l2_cache_bytes, info.theoretical_bandwidth_gbps);
    if (measure) std::printf(", \"copy_bandwidth_gbps\": %.1f", workbook::copy_bandwidth_gbps_for_run());
    std::printf("}\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "workbook_device_info: %s\n", e.what());
    return 1;
  }
}
