# The benchmark baseline: tokchron's log_histogram of commit 9fd5ae2 (before issue 23), with its
# detail/log_index.hpp, taken from git history at configure time and put in a namespace of its
# own (tokchron_v0, or TOKCHRON_BENCH_V0_NAMESPACE where a TU sets it), so that tokchron_bench
# times today's log_histogram against it in one binary (bench/ratios.py prints the ratios).
# Nothing is copied into the tree. Without git or without that commit (a tarball, a shallow
# clone) tokchron_bench is built without the baseline benchmarks (TOKCHRON_BENCH_HAS_V0 unset).
#
# The rewrite: the two files' bodies (between TOKCHRON_BEGIN_NAMESPACE and
# TOKCHRON_END_NAMESPACE) go into `namespace TOKCHRON_BENCH_V0_NAMESPACE`, which borrows
# tokchron's quantile_method and calls tokchron's detail::check_probability and
# detail::sorted_quantile (defined in exact.hpp, which the baseline shares with today's code);
# the two static_asserts on tokchron's estimator traits are dropped.
set(TOKCHRON_BENCH_V0_COMMIT 9fd5ae2)
set(TOKCHRON_BENCH_V0_DIR ${CMAKE_CURRENT_BINARY_DIR}/baseline)
set(TOKCHRON_BENCH_V0_HEADER ${TOKCHRON_BENCH_V0_DIR}/log_histogram_v0.hpp)
set(TOKCHRON_BENCH_HAS_V0 OFF)

# Prints why the baseline is missing and leaves TOKCHRON_BENCH_HAS_V0 off.
macro(tokchron_bench_v0_unavailable why)
  message(STATUS "tokchron_bench: no log_histogram baseline (${why}); the v0 benchmarks and "
                 "their ratios are left out of this build")
endmacro()

# Sets `out` to the body of `text` between its TOKCHRON_BEGIN_NAMESPACE and
# TOKCHRON_END_NAMESPACE lines, or to "" if either is missing.
function(tokchron_bench_v0_body text out)
  set(begin_marker "\nTOKCHRON_BEGIN_NAMESPACE\n")
  set(end_marker "\nTOKCHRON_END_NAMESPACE\n")
  string(FIND "${text}" "${begin_marker}" begin)
  string(FIND "${text}" "${end_marker}" end REVERSE)
  if(begin EQUAL -1 OR end EQUAL -1 OR end LESS begin)
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  string(LENGTH "${begin_marker}" begin_length)
  math(EXPR first "${begin} + ${begin_length}")
  math(EXPR length "${end} + 1 - ${first}")
  string(SUBSTRING "${text}" ${first} ${length} body)
  set(${out} "${body}" PARENT_SCOPE)
endfunction()

find_package(Git QUIET)
if(NOT GIT_FOUND)
  tokchron_bench_v0_unavailable("git not found")
else()
  set(v0_sources include/tokchron/quantile/detail/log_index.hpp
                 include/tokchron/quantile/log_histogram.hpp)
  set(v0_bodies "")
  set(v0_missing "")
  foreach(v0_source IN LISTS v0_sources)
    execute_process(
      COMMAND ${GIT_EXECUTABLE} show ${TOKCHRON_BENCH_V0_COMMIT}:${v0_source}
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
      RESULT_VARIABLE v0_result
      OUTPUT_VARIABLE v0_text
      ERROR_QUIET)
    if(NOT v0_result EQUAL 0)
      set(v0_missing "git show ${TOKCHRON_BENCH_V0_COMMIT}:${v0_source} failed")
      break()
    endif()
    tokchron_bench_v0_body("${v0_text}" v0_body)
    if(v0_body STREQUAL "")
      set(v0_missing "${v0_source} at ${TOKCHRON_BENCH_V0_COMMIT} has no namespace markers")
      break()
    endif()
    string(APPEND v0_bodies "${v0_body}")
  endforeach()
  if(NOT v0_missing STREQUAL "")
    tokchron_bench_v0_unavailable("${v0_missing}")
  else()
    string(REPLACE "detail::check_probability" "::tokchron::detail::check_probability" v0_bodies
                   "${v0_bodies}")
    string(REPLACE "detail::sorted_quantile" "::tokchron::detail::sorted_quantile" v0_bodies
                   "${v0_bodies}")
    string(REPLACE "static_assert(is_quantile_estimator_v<log_histogram>);\n" "" v0_bodies
                   "${v0_bodies}")
    string(REPLACE "static_assert(is_mergeable_estimator_v<log_histogram>);\n" "" v0_bodies
                   "${v0_bodies}")
    file(READ ${CMAKE_CURRENT_SOURCE_DIR}/baseline_v0_prologue.hpp.in v0_prologue)
    # Written next to it and copied only when it changes, so a reconfigure does not rebuild the
    # benchmarks.
    file(
      WRITE ${TOKCHRON_BENCH_V0_HEADER}.new
      "${v0_prologue}namespace TOKCHRON_BENCH_V0_NAMESPACE {\nusing ::tokchron::quantile_method;\n"
      "${v0_bodies}}  // namespace TOKCHRON_BENCH_V0_NAMESPACE\n\n"
      "#endif  // TOKCHRON_BENCH_BASELINE_LOG_HISTOGRAM_V0_HPP\n")
    configure_file(${TOKCHRON_BENCH_V0_HEADER}.new ${TOKCHRON_BENCH_V0_HEADER} COPYONLY)
    file(REMOVE ${TOKCHRON_BENCH_V0_HEADER}.new)
    set(TOKCHRON_BENCH_HAS_V0 ON)
    message(STATUS "tokchron_bench: log_histogram baseline from git ${TOKCHRON_BENCH_V0_COMMIT}")
  endif()
endif()
