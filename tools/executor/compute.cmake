# Real-compute backends of the batching executor (included by CMakeLists.txt):
#   bx_compute_cpu  the model (backends/model/), its CPU forward pass on OpenBLAS and the `cpu`
#                   backend (backends/cpu_backend.*);
#                   needs OpenBLAS (Debian libopenblas-dev), found through pkg-config `openblas`
#                   or find_package(BLAS) with BLA_VENDOR OpenBLAS.
#   bx_compute_cuda the `cuda` backend on cuBLAS and our kernels (backends/cuda/); built only when
#                   CheckLanguage finds nvcc.
# batching_executor links whichever exist and sees BATCHING_HAVE_CPU_BACKEND /
# BATCHING_HAVE_CUDA_BACKEND. Tests: tests/model_*_test.cpp and tests/cross_check_cpu_test.cpp go
# into batching_executor_tests (the directory's glob); tests/cross_check_cuda.cpp is its own
# executable (exit 77 = skipped when no GPU is present).

set(_bx_compute_tests
  ${CMAKE_CURRENT_SOURCE_DIR}/tests/model_forward_test.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/tests/model_cpu_backend_test.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/tests/cross_check_cpu_test.cpp)

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(TOKCHRON_OPENBLAS QUIET IMPORTED_TARGET openblas)
endif()
if(TARGET PkgConfig::TOKCHRON_OPENBLAS)
  set(_bx_blas PkgConfig::TOKCHRON_OPENBLAS)
else()
  set(BLA_VENDOR OpenBLAS)
  find_package(BLAS QUIET)
  if(BLAS_FOUND)
    set(_bx_blas BLAS::BLAS)
  endif()
endif()

if(NOT _bx_blas)
  message(STATUS "tokchron: cpu backend skipped: OpenBLAS not found (Debian libopenblas-dev)")
  set_source_files_properties(${_bx_compute_tests} PROPERTIES HEADER_FILE_ONLY ON)
  return()
endif()

add_library(bx_compute_cpu STATIC
  backends/model/model.cpp
  backends/model/forward.cpp
  backends/cpu_backend.cpp)
target_include_directories(bx_compute_cpu PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/backends)
target_link_libraries(bx_compute_cpu PUBLIC bx_core ${_bx_blas})
target_compile_features(bx_compute_cpu PUBLIC cxx_std_17)
tokchron_target_warnings(bx_compute_cpu)
target_link_libraries(batching_executor PUBLIC bx_compute_cpu)
target_compile_definitions(batching_executor PUBLIC BATCHING_HAVE_CPU_BACKEND=1)

# Measures copy bandwidth, decode step times against the roofline floor, prefill throughput
# (bx_sim: the `hw` key's floors and predictions).
add_executable(cpu-roofline backends/model/roofline_main.cpp)
target_link_libraries(cpu-roofline PRIVATE bx_sim bx_compute_cpu)
tokchron_target_warnings(cpu-roofline)

if(TARGET batching_executor_tests)
  target_link_libraries(batching_executor_tests PRIVATE bx_compute_cpu)
  # docs/tools/capacity-planning.md end to end on the cpu backend (about 80 s of CPU): in optimised
  # builds without sanitizers only, where the model runs at the speed users see. It runs beside
  # other tests: the steps are timed on the thread's CPU clock, and every configuration is
  # measured in one interleaved sweep, so what other work does to the caches and memory
  # bandwidth it does to all of them alike (docs/tools/capacity-planning.md, "Why a neighbour cannot
  # move the verdict"). TIMEOUT: 3 minutes of wall time on a 2-core machine, 8 when ten other
  # jobs shared it. Skipped (77) without python3, which reads the runs' JSON.
  if(NOT CMAKE_BUILD_TYPE MATCHES "^(Debug|)$" AND NOT CMAKE_CXX_FLAGS MATCHES "sanitize")
    add_test(NAME batching_executor.capacity_planning
             COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/capacity_planning_check.sh
                     $<TARGET_FILE:batching-executor>
                     ${CMAKE_CURRENT_BINARY_DIR}/capacity_planning)
    set_tests_properties(batching_executor.capacity_planning PROPERTIES TIMEOUT 1500
                                                                        SKIP_RETURN_CODE 77)
  endif()
endif()

option(TOKCHRON_CUDA "Build the CUDA backend when nvcc is found" ON)
if(NOT TOKCHRON_CUDA)
  message(STATUS "tokchron: CUDA backend skipped: TOKCHRON_CUDA is OFF")
  return()
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  message(STATUS "tokchron: CUDA backend skipped: nvcc not found")
  return()
endif()
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  # H100/H200 (sm_90); "native" fails on a machine without a GPU.
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
message(STATUS "tokchron: CUDA backend enabled (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
               "architectures ${CMAKE_CUDA_ARCHITECTURES})")
add_library(bx_compute_cuda STATIC backends/cuda/cuda_backend.cu backends/cuda/kernels.cu)
target_link_libraries(bx_compute_cuda PUBLIC bx_compute_cpu CUDA::cudart CUDA::cublas)
# PRIVATE: a PUBLIC cuda_std_17 would reach targets in directories without CUDA enabled.
set_target_properties(bx_compute_cuda PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
target_compile_options(bx_compute_cuda PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings --expt-relaxed-constexpr>)
target_link_libraries(batching_executor PUBLIC bx_compute_cuda)
target_compile_definitions(batching_executor PUBLIC BATCHING_HAVE_CUDA_BACKEND=1)

# The same tool on the GPU (ROOFLINE_CUDA): device bandwidth and cuBLAS throughput, the cuda
# backend's step times; tools/executor/backends/cuda/gpu_check.sh runs it.
add_executable(cuda-roofline backends/model/roofline_main.cpp)
target_compile_definitions(cuda-roofline PRIVATE ROOFLINE_CUDA=1)
target_link_libraries(cuda-roofline PRIVATE bx_sim bx_compute_cuda)
tokchron_target_warnings(cuda-roofline)

if(TOKCHRON_BUILD_TESTS)
  add_executable(cross_check_cuda tests/cross_check_cuda.cpp)
  target_link_libraries(cross_check_cuda PRIVATE bx_compute_cuda doctest::doctest)
  tokchron_target_warnings(cross_check_cuda)
  add_test(NAME cross_check_cuda COMMAND cross_check_cuda)
  set_tests_properties(cross_check_cuda PROPERTIES SKIP_RETURN_CODE 77)
endif()
