# Separate instantiation (tokchron/record.hpp, TOKCHRON_SEPARATE_INSTANTIATION): a hot file that
# sees only the extern template declarations and one file with tokchron/record_instantiate.hpp
# link into one program, and its recordings give the canonical figures.
add_executable(tokchron_record_separate ${CMAKE_CURRENT_LIST_DIR}/hot_file.cpp
                                        ${CMAKE_CURRENT_LIST_DIR}/instances.cpp)
target_link_libraries(tokchron_record_separate PRIVATE tokchron::concurrent)
target_compile_definitions(tokchron_record_separate PRIVATE TOKCHRON_SEPARATE_INSTANTIATION)
tokchron_target_warnings(tokchron_record_separate)
add_test(NAME tokchron_record_separate COMMAND tokchron_record_separate)
