# tokchron_target_warnings(<target>): strict warnings, as errors, on tokchron's own targets.
# TOKCHRON_WERROR (default ON) turns the -Werror part off for people building with newer compilers.
option(TOKCHRON_WERROR "Treat warnings in tokchron's own targets as errors" ON)
function(tokchron_target_warnings target)
  if(MSVC)
    target_compile_options(${target} PRIVATE /W4 $<$<BOOL:${TOKCHRON_WERROR}>:/WX>)
  else()
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>
      $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${TOKCHRON_WERROR}>>:-Werror>)
  endif()
endfunction()
