# SPDX-License-Identifier: MIT
# Builds hot_file.cpp in separate mode with no instantiations (cmake -P, tests.cmake) and
# checks that the link fails and its message names the sentinel symbol, which says the fix.
execute_process(
  COMMAND ${CXX} -std=c++17 -DTOKCHRON_SEPARATE_INSTANTIATION -I${INC} ${SRC} -o ${OUT} -pthread
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "separate mode without the instantiations linked; it must not")
endif()
string(FIND "${out}${err}"
       "separate_instantiation_needs_link_tokchron_record_or_record_instantiate_hpp_in_one_cpp"
       at)
if(at EQUAL -1)
  message(FATAL_ERROR "the link failed without naming the sentinel:\n${err}")
endif()
message(STATUS "the link fails naming the sentinel, as it should")
