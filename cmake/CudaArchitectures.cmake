# Chooses CMAKE_CUDA_ARCHITECTURES before project() enables CUDA.
# - The user's choice always wins (-DCMAKE_CUDA_ARCHITECTURES=... or the CUDAARCHS variable).
# - A GPU is visible (nvidia-smi answers): the GPUs' own architectures, as numbers ("9.0" -> 90).
#   Not "native": with it, CMake's check of the compiler builds its test program for every
#   architecture nvcc knows, which took 7 of a fresh configure's 10 s on the H100 machine. A GPU
#   newer than this nvcc gets nvcc's newest architecture as PTX, which the driver compiles.
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
    string(REGEX MATCHALL "[0-9]+\\.[0-9]+" _workbook_caps "${_workbook_caps}")
    string(REPLACE "." "" _workbook_gpu_archs "${_workbook_caps}")
    list(REMOVE_DUPLICATES _workbook_gpu_archs)
    # The architectures this nvcc builds for (compute_75 compute_80 ...), when it can say.
    if(DEFINED ENV{CUDACXX})
      set(_workbook_nvcc "$ENV{CUDACXX}")
    else()
      find_program(_workbook_nvcc nvcc PATHS /usr/local/cuda/bin)
    endif()
    set(_workbook_known "")
    if(_workbook_nvcc)
      execute_process(COMMAND "${_workbook_nvcc}" --list-gpu-arch OUTPUT_VARIABLE _workbook_listed
                      RESULT_VARIABLE _workbook_list_result ERROR_QUIET)
      if(_workbook_list_result EQUAL 0)
        string(REGEX MATCHALL "compute_[0-9]+" _workbook_listed "${_workbook_listed}")
        string(REPLACE "compute_" "" _workbook_known "${_workbook_listed}")
      endif()
    endif()
    set(_workbook_newest 0)
    foreach(_workbook_one IN LISTS _workbook_known)
      if(_workbook_one GREATER _workbook_newest)
        set(_workbook_newest ${_workbook_one})
      endif()
    endforeach()
    set(_workbook_arch "")
    foreach(_workbook_gpu IN LISTS _workbook_gpu_archs)
      if(_workbook_known AND _workbook_gpu GREATER _workbook_newest)  # newer than this nvcc: its newest as PTX
        list(APPEND _workbook_arch ${_workbook_newest}-virtual)
      else()  # one nvcc does not know at all (older than its oldest) fails with nvcc's own message
        list(APPEND _workbook_arch ${_workbook_gpu})
      endif()
    endforeach()
    list(REMOVE_DUPLICATES _workbook_arch)
  endif()
endif()
set(CMAKE_CUDA_ARCHITECTURES "${_workbook_arch}" CACHE STRING "CUDA architectures (the GPUs' own when nvidia-smi lists them)")
message(STATUS "CUDA architectures: ${CMAKE_CUDA_ARCHITECTURES}")
