# The JSON trace adaptor's tests (io/trace_json_*.hpp need nlohmann-json): their own binary, as
# they need a library the main test binary does not link.
find_package(nlohmann_json 3 REQUIRED)
add_executable(tokchron_io_tests ${CMAKE_CURRENT_LIST_DIR}/../main.cpp
                                 ${CMAKE_CURRENT_LIST_DIR}/trace_json_tests.cpp
                                 ${CMAKE_CURRENT_LIST_DIR}/async_trace_sink_test.cpp)
target_link_libraries(tokchron_io_tests PRIVATE tokchron::concurrent doctest::doctest
                                                nlohmann_json::nlohmann_json)
target_compile_definitions(tokchron_io_tests PRIVATE TOKCHRON_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
tokchron_target_warnings(tokchron_io_tests)
add_test(NAME tokchron_io_tests COMMAND tokchron_io_tests)
