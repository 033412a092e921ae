/// \file
/// Counts the calls the student's code makes into cuBLAS and cuBLASLt, so the grader can
/// tell whether a task that asks for a hand-written kernel called the library (task 4) and
/// whether the task that asks for the library did (task 3).
///
/// How: the lesson's grader programs are linked with `--wrap=<function>` for the entry
/// points below (grader/03_matmul/grader.cmake), so every call to, say, cublasSgemm_v2 from
/// any object of the program reaches __wrap_cublasSgemm_v2 here, which counts it and calls
/// the real function. The grader's own cuBLAS calls are counted too: read the count only
/// around a call into the student's code.
#pragma once

#include <string>
#include <vector>

namespace grader {

/// Clears the record of calls.
void reset_cublas_calls();

/// The cuBLAS/cuBLASLt functions called since the last reset, in call order (each name once).
std::vector<std::string> cublas_calls();

/// How many of those calls compute a matrix product (GEMM of any kind).
int cublas_gemm_calls();

/// How many of those GEMM calls returned a status other than CUBLAS_STATUS_SUCCESS.
int cublas_failed_gemm_calls();

}  // namespace grader
