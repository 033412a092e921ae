// Shared by the GPU test cases of common/: skip visibly when there is no GPU.
#pragma once

#include "workbook/device_info.hpp"

#include <catch2/catch_test_macros.hpp>

#define REQUIRE_GPU()                                                                  \
  do {                                                                                 \
    if (::workbook::cuda_device_count() == 0) SKIP(::workbook::no_gpu_reason());       \
  } while (false)
