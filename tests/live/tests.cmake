# The live-metrics tests (tests/live/*_test.cpp, also in tokchron_tests) and the collector's, in
# a small binary of their own: .ci/stages/32-tsan.sh builds just this target with
# -fsanitize=thread and runs the stress tests under ThreadSanitizer. Not built by default.
file(GLOB _tc_live_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cpp)
add_executable(tokchron_live_tests EXCLUDE_FROM_ALL ${CMAKE_CURRENT_LIST_DIR}/../main.cpp
               ${_tc_live_tests} ${CMAKE_CURRENT_LIST_DIR}/../collect/collector_test.cpp)
target_link_libraries(tokchron_live_tests PRIVATE tokchron::tokchron doctest::doctest
                                                  Threads::Threads)
target_include_directories(tokchron_live_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
target_compile_definitions(tokchron_live_tests PRIVATE
  TOKCHRON_SOURCE_DIR="${PROJECT_SOURCE_DIR}" TOKCHRON_BINARY_DIR="${PROJECT_BINARY_DIR}")
tokchron_target_warnings(tokchron_live_tests)
