# The fuzz targets' seed corpora and regression inputs replay in the ordinary test run (any
# compiler, no libFuzzer): each target's LLVMFuzzerTestOneInput linked with replay_main.cpp.
# The fuzzing itself (clang -fsanitize=fuzzer) is CI stage .ci/stages/35-fuzz.sh. The targets
# of the tools compile the tool's source they test with them (as the stage does):
# sse_decoder tools/bench/sse.cpp, serve_request tools/executor/serve/openai.cpp (with
# Boost.Beast's headers and the executor's core/ for its kv_cache.hpp).
set(_tc_fuzz_dir ${CMAKE_CURRENT_LIST_DIR})
find_package(nlohmann_json 3 QUIET)
set(_tc_fuzz_source_sse_decoder ${PROJECT_SOURCE_DIR}/tools/bench/sse.cpp)
set(_tc_fuzz_source_serve_request ${PROJECT_SOURCE_DIR}/tools/executor/serve/openai.cpp)
foreach(_t IN ITEMS slo log_histogram trace_line timeline_calls sse_decoder serve_request)
  if(_t MATCHES "^(trace_line|sse_decoder|serve_request)$"
     AND NOT TARGET nlohmann_json::nlohmann_json)
    message(STATUS "tokchron: fuzz replay of ${_t} skipped (nlohmann-json not found)")
    continue()
  endif()
  add_executable(tokchron_fuzz_replay_${_t} ${_tc_fuzz_dir}/replay_main.cpp
                                            ${_tc_fuzz_dir}/${_t}_fuzz.cpp)
  target_link_libraries(tokchron_fuzz_replay_${_t} PRIVATE tokchron::tokchron)
  if(_t MATCHES "^(trace_line|sse_decoder|serve_request)$")
    target_link_libraries(tokchron_fuzz_replay_${_t} PRIVATE nlohmann_json::nlohmann_json)
  endif()
  if(DEFINED _tc_fuzz_source_${_t})
    target_sources(tokchron_fuzz_replay_${_t} PRIVATE ${_tc_fuzz_source_${_t}})
    get_filename_component(_dir ${_tc_fuzz_source_${_t}} DIRECTORY)
    target_include_directories(tokchron_fuzz_replay_${_t} PRIVATE ${_dir})
  endif()
  if(_t STREQUAL "serve_request")  # openai.cpp names prompt blocks with core/kv_cache.hpp
    target_link_libraries(tokchron_fuzz_replay_${_t} PRIVATE Boost::headers)
    target_include_directories(tokchron_fuzz_replay_${_t}
                               PRIVATE ${PROJECT_SOURCE_DIR}/tools/executor/core)
  endif()
  tokchron_target_warnings(tokchron_fuzz_replay_${_t})
  add_test(NAME tokchron_fuzz_replay_${_t}
           COMMAND tokchron_fuzz_replay_${_t} ${_tc_fuzz_dir}/corpus/${_t}
                   ${_tc_fuzz_dir}/regressions/${_t})
endforeach()
