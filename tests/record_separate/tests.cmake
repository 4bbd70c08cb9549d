# Separate instantiation (tokchron/record.hpp, TOKCHRON_SEPARATE_INSTANTIATION): a hot file that
# sees only the extern template declarations and one file with tokchron/record_instantiate.hpp
# link into one program, and its recordings give the canonical figures.
add_executable(tokchron_record_separate ${CMAKE_CURRENT_LIST_DIR}/hot_file.cpp
                                        ${CMAKE_CURRENT_LIST_DIR}/instances.cpp)
target_link_libraries(tokchron_record_separate PRIVATE tokchron::concurrent)
target_compile_definitions(tokchron_record_separate PRIVATE TOKCHRON_SEPARATE_INSTANTIATION)
tokchron_target_warnings(tokchron_record_separate)
add_test(NAME tokchron_record_separate COMMAND tokchron_record_separate)

# The same hot file linking tokchron::record instead of a file of its own: the macro comes
# with the target, the instantiations from its library.
if(TARGET tokchron::record)
  add_executable(tokchron_record_linked ${CMAKE_CURRENT_LIST_DIR}/hot_file.cpp)
  target_link_libraries(tokchron_record_linked PRIVATE tokchron::record)
  tokchron_target_warnings(tokchron_record_linked)
  add_test(NAME tokchron_record_linked COMMAND tokchron_record_linked)
endif()

# Separate mode without the instantiations: the link fails, naming the sentinel that says the
# fix (record.hpp).
add_test(NAME tokchron_record_missing_instances
         COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} -DSRC=${CMAKE_CURRENT_LIST_DIR}/hot_file.cpp
                 -DINC=${PROJECT_SOURCE_DIR}/include -DOUT=${CMAKE_CURRENT_BINARY_DIR}/missing_instances
                 -P ${CMAKE_CURRENT_LIST_DIR}/missing_instances.cmake)
