// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_BACKENDS_CUDA_CHECK_CUH
#define TOKCHRON_TOOLS_EXECUTOR_BACKENDS_CUDA_CHECK_CUH

/// \file
/// Checks for every CUDA runtime and cuBLAS call: a failure throws `std::runtime_error` naming
/// the call, the file and line, and the error. `BX_CHECK_LAUNCH()` follows every kernel launch.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace batching::compute::cuda {

[[noreturn]] inline void fail(const char* what, const char* file, int line, const std::string& e) {
  throw std::runtime_error(std::string("cuda backend: ") + what + " failed at " + file + ":" +
                           std::to_string(line) + ": " + e);
}

}  // namespace batching::compute::cuda

#define BX_CUDA(call)                                                                         \
  do {                                                                                        \
    const cudaError_t bx_err_ = (call);                                                       \
    if (bx_err_ != cudaSuccess)                                                               \
      ::batching::compute::cuda::fail(                                                        \
          #call, __FILE__, __LINE__,                                                          \
          std::string(cudaGetErrorName(bx_err_)) + " (" + cudaGetErrorString(bx_err_) + ")"); \
  } while (0)

#define BX_CUBLAS(call)                                                                           \
  do {                                                                                            \
    const cublasStatus_t bx_st_ = (call);                                                         \
    if (bx_st_ != CUBLAS_STATUS_SUCCESS)                                                          \
      ::batching::compute::cuda::fail(                                                            \
          #call, __FILE__, __LINE__,                                                              \
          std::string(cublasGetStatusName(bx_st_)) + " (" + cublasGetStatusString(bx_st_) + ")"); \
  } while (0)

#define BX_CHECK_LAUNCH() BX_CUDA(cudaGetLastError())

#endif  // TOKCHRON_TOOLS_EXECUTOR_BACKENDS_CUDA_CHECK_CUH
