# Lesson 03's grader programs see every call into cuBLAS (cublas_spy.hpp): the linker sends
# calls to these functions through the __wrap_ versions in cublas_spy.cpp. Included by
# workbook_add_lesson(), which links ${link} into every grader program of the lesson.
set(spied cublasCreate_v2 cublasSgemm_v2 cublasGemmEx cublasSgemmEx cublasSgemmStridedBatched
  cublasGemmStridedBatchedEx cublasLtCreate cublasLtMatmul cublasSgemm_v2_64 cublasGemmEx_64)
list(TRANSFORM spied PREPEND "LINKER:--wrap=")
target_link_options(${link} INTERFACE ${spied})
target_link_libraries(${link} INTERFACE CUDA::cublas CUDA::cublasLt)
