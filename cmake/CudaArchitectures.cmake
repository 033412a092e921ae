# Chooses CMAKE_CUDA_ARCHITECTURES before project() enables CUDA.
# - The user's choice always wins (-DCMAKE_CUDA_ARCHITECTURES=... or the CUDAARCHS variable).
# - A GPU is visible (nvidia-smi answers): "native", the GPU's own architecture.
# - No GPU (CI, a laptop without NVIDIA): a short fixed list. nvcc 13 starts at sm_75;
#   90 is Hopper (H100/H200). Other GPUs run the embedded compute_75 PTX.
if(DEFINED CMAKE_CUDA_ARCHITECTURES OR DEFINED ENV{CUDAARCHS})
  return()
endif()

set(_workbook_arch "75;90")
find_program(WORKBOOK_NVIDIA_SMI nvidia-smi)
if(WORKBOOK_NVIDIA_SMI)
  execute_process(
    COMMAND "${WORKBOOK_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
    OUTPUT_VARIABLE _workbook_caps
    RESULT_VARIABLE _workbook_smi_result
    ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_workbook_smi_result EQUAL 0 AND _workbook_caps MATCHES "^[0-9]+\\.[0-9]+")
    set(_workbook_arch native)
  endif()
endif()
set(CMAKE_CUDA_ARCHITECTURES "${_workbook_arch}" CACHE STRING "CUDA architectures (native when a GPU was found)")
message(STATUS "CUDA architectures: ${CMAKE_CUDA_ARCHITECTURES}")
