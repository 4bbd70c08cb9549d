# The bad-input rows that need nlohmann-json, each binary of its own: the JSON trace reader's
# rows (the main test binary does not link nlohmann-json), and row M1, memory bounded by the
# input's size, measured by the test process (it replaces operator new and delete).
find_package(nlohmann_json 3 QUIET)
if(TARGET nlohmann_json::nlohmann_json)
  foreach(_tc_bad IN ITEMS json:trace_json_bad_input memory:memory_bound)
    string(REPLACE ":" ";" _tc_bad ${_tc_bad})
    list(GET _tc_bad 0 _tc_name)
    list(GET _tc_bad 1 _tc_src)
    add_executable(tokchron_bad_input_${_tc_name}_tests ${CMAKE_CURRENT_LIST_DIR}/../main.cpp
                   ${CMAKE_CURRENT_LIST_DIR}/${_tc_src}.cpp)
    target_link_libraries(tokchron_bad_input_${_tc_name}_tests PRIVATE tokchron::concurrent
                          doctest::doctest nlohmann_json::nlohmann_json)
    tokchron_target_warnings(tokchron_bad_input_${_tc_name}_tests)
    add_test(NAME tokchron_bad_input_${_tc_name}_tests COMMAND tokchron_bad_input_${_tc_name}_tests)
  endforeach()
else()
  message(STATUS "tokchron: bad-input JSON trace and memory tests skipped (nlohmann-json not found)")
endif()
