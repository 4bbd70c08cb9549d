# The testing helpers' string makers as a test's reader sees them: a doctest program and (when
# Catch2 2.x is found) a Catch2 program each fail one check on purpose, and the test passes only
# when the program's output holds the whole difference (request id, values, units) in the
# framework's failure report. Included by tests/CMakeLists.txt.
set(_tc_difference "request r1: 1 metric differs from tokchron")
set(_tc_tpot "tpot: yours 0.028 s, tokchron 0.01 s, yours - tokchron = 0.018 s")
set(_tc_tolerance "tolerance: 1e-09 relative \\+ 1e-12 absolute")

add_executable(tokchron_failing_doctest ${CMAKE_CURRENT_LIST_DIR}/failing_doctest.cpp)
target_link_libraries(tokchron_failing_doctest PRIVATE tokchron::tokchron doctest::doctest)
tokchron_target_warnings(tokchron_failing_doctest)
add_test(NAME testing_doctest_prints_difference COMMAND tokchron_failing_doctest)
set_tests_properties(testing_doctest_prints_difference PROPERTIES PASS_REGULAR_EXPRESSION
  "values: CHECK\\( ${_tc_difference}\n  ${_tc_tpot}\n  ${_tc_tolerance} == no difference \\)")

find_package(Catch2 2 CONFIG QUIET)
if(TARGET Catch2::Catch2)
  add_executable(tokchron_failing_catch2 ${CMAKE_CURRENT_LIST_DIR}/failing_catch2.cpp)
  target_link_libraries(tokchron_failing_catch2 PRIVATE tokchron::tokchron Catch2::Catch2)
  tokchron_target_warnings(tokchron_failing_catch2)
  add_test(NAME testing_catch2_prints_difference COMMAND tokchron_failing_catch2)
  set_tests_properties(testing_catch2_prints_difference PROPERTIES PASS_REGULAR_EXPRESSION
    "with expansion:\n  ${_tc_difference}\n    ${_tc_tpot}\n    ${_tc_tolerance}\n  ==\n  no difference")
else()
  message(STATUS "tokchron: Catch2 2.x not found; the Catch2 string-maker test is skipped")
endif()
