# tokchron_target_warnings(<target>): strict warnings on tokchron's own targets, as errors when
# TOKCHRON_WERROR is on. As a subproject (add_subdirectory, FetchContent) it is OFF, so a newer
# compiler's new warning never breaks a consumer's build (fmt makes the same choice: its
# CMakeLists.txt declares FMT_WERROR OFF). When tokchron is the top-level project (its own CI
# and development builds) it is ON; CI also passes -DTOKCHRON_WERROR=ON explicitly.
if(NOT DEFINED TOKCHRON_TOP_LEVEL)
  string(COMPARE EQUAL "${CMAKE_SOURCE_DIR}" "${PROJECT_SOURCE_DIR}" TOKCHRON_TOP_LEVEL)
endif()
option(TOKCHRON_WERROR "Treat warnings in tokchron's own targets as errors" ${TOKCHRON_TOP_LEVEL})
function(tokchron_target_warnings target)
  if(MSVC)
    target_compile_options(${target} PRIVATE /W4 $<$<BOOL:${TOKCHRON_WERROR}>:/WX>)
  else()
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>
      $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${TOKCHRON_WERROR}>>:-Werror>)
  endif()
endfunction()
