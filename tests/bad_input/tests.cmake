# The bad-input rows for the JSON trace reader (io/trace_json.hpp needs nlohmann-json): their
# own binary, as the main test binary does not link it.
find_package(nlohmann_json 3 QUIET)
if(TARGET nlohmann_json::nlohmann_json)
  add_executable(tokchron_bad_input_json_tests ${CMAKE_CURRENT_LIST_DIR}/../main.cpp
                 ${CMAKE_CURRENT_LIST_DIR}/trace_json_bad_input.cpp)
  target_link_libraries(tokchron_bad_input_json_tests PRIVATE tokchron::tokchron
                        doctest::doctest nlohmann_json::nlohmann_json)
  tokchron_target_warnings(tokchron_bad_input_json_tests)
  add_test(NAME tokchron_bad_input_json_tests COMMAND tokchron_bad_input_json_tests)
else()
  message(STATUS "tokchron: bad-input JSON trace tests skipped (nlohmann-json not found)")
endif()

# Row M1: memory bounded by the input's size, measured by the test process (it replaces operator
# new and delete, so it is a binary of its own).
if(TARGET nlohmann_json::nlohmann_json)
  add_executable(tokchron_bad_input_memory_tests ${CMAKE_CURRENT_LIST_DIR}/../main.cpp
                 ${CMAKE_CURRENT_LIST_DIR}/memory_bound.cpp)
  target_link_libraries(tokchron_bad_input_memory_tests PRIVATE tokchron::tokchron
                        doctest::doctest nlohmann_json::nlohmann_json)
  tokchron_target_warnings(tokchron_bad_input_memory_tests)
  add_test(NAME tokchron_bad_input_memory_tests COMMAND tokchron_bad_input_memory_tests)
endif()
