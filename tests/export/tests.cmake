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

# The nlohmann-json adaptors (a base package): OTLP JSON (export/otlp.hpp) and the summary /
# verdict / audit JSON (export/json.hpp), in their own binary.
find_package(nlohmann_json 3 REQUIRED)
add_executable(tokchron_export_json_tests ${CMAKE_CURRENT_LIST_DIR}/../main.cpp
                                          ${CMAKE_CURRENT_LIST_DIR}/otlp_tests.cpp
                                          ${CMAKE_CURRENT_LIST_DIR}/json_tests.cpp)
target_link_libraries(tokchron_export_json_tests PRIVATE tokchron::tokchron doctest::doctest
                                                         nlohmann_json::nlohmann_json)
target_include_directories(tokchron_export_json_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
target_compile_definitions(tokchron_export_json_tests PRIVATE
                           TOKCHRON_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
tokchron_target_warnings(tokchron_export_json_tests)
add_test(NAME tokchron_export_json_tests COMMAND tokchron_export_json_tests)

# The protobuf adaptors, when CMake found protobuf (Debian libprotobuf-dev, protobuf-compiler):
# the Prometheus exposition with native histograms (export/prometheus_protobuf.hpp) and OTLP/HTTP
# protobuf (export/otlp_protobuf.hpp), decoded by protobuf's own parsers.
if(TARGET tokchron::prometheus_protobuf AND TARGET tokchron::otlp_protobuf)
  add_executable(tokchron_export_protobuf_tests ${CMAKE_CURRENT_LIST_DIR}/../main.cpp
                 ${CMAKE_CURRENT_LIST_DIR}/prometheus_protobuf_tests.cpp
                 ${CMAKE_CURRENT_LIST_DIR}/otlp_protobuf_tests.cpp)
  target_link_libraries(tokchron_export_protobuf_tests PRIVATE tokchron::prometheus_protobuf
                        tokchron::otlp_protobuf doctest::doctest)
  target_include_directories(tokchron_export_protobuf_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
  target_compile_definitions(tokchron_export_protobuf_tests PRIVATE
                             TOKCHRON_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  tokchron_target_warnings(tokchron_export_protobuf_tests)
  add_test(NAME tokchron_export_protobuf_tests COMMAND tokchron_export_protobuf_tests)
else()
  message(STATUS "tokchron: protobuf not found; skipping tokchron_export_protobuf_tests")
endif()

# tokchron_otlp_dump: the OTLP export of known samples, for CI stage 41 (.ci/stages/41-otlp.sh),
# which decodes it with OpenTelemetry's own JavaScript packages: OTLP/JSON, and OTLP/HTTP
# protobuf when tokchron::otlp_protobuf is there.
add_executable(tokchron_otlp_dump ${CMAKE_CURRENT_LIST_DIR}/otlp_dump.cpp)
target_link_libraries(tokchron_otlp_dump PRIVATE tokchron::tokchron nlohmann_json::nlohmann_json)
if(TARGET tokchron::otlp_protobuf)
  target_link_libraries(tokchron_otlp_dump PRIVATE tokchron::otlp_protobuf)
  target_compile_definitions(tokchron_otlp_dump PRIVATE TOKCHRON_OTLP_PROTOBUF)
endif()
tokchron_target_warnings(tokchron_otlp_dump)
