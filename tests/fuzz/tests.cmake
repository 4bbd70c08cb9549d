# The fuzz targets' seed corpora and regression inputs replay in the ordinary test run (any
# compiler, no libFuzzer): each target's LLVMFuzzerTestOneInput linked with replay_main.cpp.
# The fuzzing itself (clang -fsanitize=fuzzer) is CI stage .ci/stages/35-fuzz.sh.
set(_tc_fuzz_dir ${CMAKE_CURRENT_LIST_DIR})
find_package(nlohmann_json 3 QUIET)
foreach(_t IN ITEMS slo log_histogram trace_line timeline_calls)
  if(_t STREQUAL "trace_line" AND NOT TARGET nlohmann_json::nlohmann_json)
    message(STATUS "tokchron: fuzz replay of trace_line skipped (nlohmann-json not found)")
    continue()
  endif()
  add_executable(tokchron_fuzz_replay_${_t} ${_tc_fuzz_dir}/replay_main.cpp
                                            ${_tc_fuzz_dir}/${_t}_fuzz.cpp)
  target_link_libraries(tokchron_fuzz_replay_${_t} PRIVATE tokchron::tokchron)
  if(_t STREQUAL "trace_line")
    target_link_libraries(tokchron_fuzz_replay_${_t} PRIVATE nlohmann_json::nlohmann_json)
  endif()
  tokchron_target_warnings(tokchron_fuzz_replay_${_t})
  add_test(NAME tokchron_fuzz_replay_${_t}
           COMMAND tokchron_fuzz_replay_${_t} ${_tc_fuzz_dir}/corpus/${_t}
                   ${_tc_fuzz_dir}/regressions/${_t})
endforeach()
