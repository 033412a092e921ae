// workbook_device_info: the GPU's properties as one JSON object, for the grader and for
// students' reports. With --measure-copy it adds the measured device-to-device copy
// bandwidth, the ceiling memory-bound kernels are graded against. "uuid" names the GPU as
// nvidia-smi does, so the grader can lock that very GPU and ask nvidia-smi who else uses it.
// Exit codes: 0 fine, 3 no usable GPU (one sentence on stderr), 1 anything else.
#include "workbook/cuda_check.hpp"
#include "workbook/device_info.hpp"

#include <cuda_runtime_api.h>

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

// The device's UUID as nvidia-smi prints it: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
std::string uuid_string(int device) {
  cudaDeviceProp prop{};
  WORKBOOK_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::string out = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(prop.uuid.bytes[i]));
    out += hex;
  }
  return out;
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
    std::printf("{\"name\": %s, \"uuid\": %s, \"compute_capability\": \"%d.%d\", \"sm_count\": %d, "
                "\"max_threads_per_block\": %d, \"max_threads_per_sm\": %d, \"total_memory_bytes\": %zu, "
                "\"free_memory_bytes\": %zu, \"l2_cache_bytes\": %d, \"theoretical_bandwidth_gbps\": %.1f",
                json_string(info.name).c_str(), json_string(uuid_string(info.device)).c_str(), info.cc_major,
                info.cc_minor, info.sm_count, info.max_threads_per_block, info.max_threads_per_sm,
                info.total_memory_bytes, info.free_memory_bytes, info.l2_cache_bytes,
                info.theoretical_bandwidth_gbps);
    if (measure) std::printf(", \"copy_bandwidth_gbps\": %.1f", workbook::copy_bandwidth_gbps_for_run());
    std::printf("}\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "workbook_device_info: %s\n", e.what());
    return 1;
  }
}
