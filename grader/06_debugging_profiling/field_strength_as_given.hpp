// Task 5's field strength as the lesson gives it (field_strength_as_given.cu).
#pragma once

#include <cuda_runtime.h>

void field_strength_given(const float* phi, float* e, int nx, int ny, float h, cudaStream_t stream);
