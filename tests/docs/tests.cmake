# The C++ blocks of the reference pages marked `<!-- compile: ... -->`, compiled as printed
# (compile_snippets.py). README.md is checked too: until its snippets carry markers it adds
# none, and --require counts the pages' blocks so the check cannot pass with none at all.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME tokchron_doc_snippets
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/compile_snippets.py
                   --cxx ${CMAKE_CXX_COMPILER} --include ${PROJECT_SOURCE_DIR}/include --require 4
                   README.md docs/library/server-integration.md docs/library/live-metrics.md
                   docs/library/concurrency.md
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endif()
