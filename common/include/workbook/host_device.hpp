/// \file
/// WORKBOOK_HOST_DEVICE: a function the host and the device both compile (`__host__ __device__`
/// under nvcc, nothing under a host compiler), for what both sides must compute identically.
#pragma once

#if defined(__CUDACC__)
#define WORKBOOK_HOST_DEVICE __host__ __device__
#else
#define WORKBOOK_HOST_DEVICE
#endif
