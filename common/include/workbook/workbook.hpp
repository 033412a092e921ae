/// \file
/// The whole helper library in one include.
#pragma once

#include "workbook/compare.hpp"
#include "workbook/cuda_check.hpp"
#include "workbook/device_buffer.hpp"
#include "workbook/device_info.hpp"
#include "workbook/guarded_array.hpp"
#include "workbook/parallel.hpp"
#include "workbook/random.hpp"
#include "workbook/startup_environment.hpp"
#include "workbook/stream.hpp"
#include "workbook/timer.hpp"
