# The prometheus-cpp adaptor's test (Debian prometheus-cpp-dev): skipped, with a message, when
# prometheus-cpp is not installed. .ci/stages/40-prometheus.sh installs it and runs this.
find_package(prometheus-cpp CONFIG QUIET)
if(TARGET prometheus-cpp::core AND TARGET prometheus-cpp::pull)
  add_executable(tokchron_prometheus_cpp_test ${CMAKE_CURRENT_LIST_DIR}/prometheus_cpp_check.cpp)
  target_link_libraries(tokchron_prometheus_cpp_test PRIVATE tokchron::tokchron doctest::doctest
                        prometheus-cpp::core prometheus-cpp::pull Threads::Threads)
  target_include_directories(tokchron_prometheus_cpp_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
  tokchron_target_warnings(tokchron_prometheus_cpp_test)
  add_test(NAME tokchron_prometheus_cpp_test COMMAND tokchron_prometheus_cpp_test)
else()
  message(STATUS "tokchron: prometheus-cpp not found; skipping tokchron_prometheus_cpp_test")
endif()
