# cuda_streams_replace(OUT_VAR SOURCE WHO REPLACE old new [REPLACE old new ...])
#
# Reads SOURCE and sets OUT_VAR to its text with each `old` replaced by `new`; each `old` must
# occur (WHO names the caller in the error). The one rule of a solution file, shared by
# exercise_solution() in a build and by solutions/apply.cmake outside one. The texts travel as a
# CMake list, so neither may contain a ';'.
function(cuda_streams_replace out_var source who)
  file(READ ${source} text)
  get_filename_component(source_name ${source} NAME)
  set(rest ${ARGN})
  while(rest)
    list(LENGTH rest remaining)
    list(GET rest 0 keyword)
    if(NOT keyword STREQUAL "REPLACE" OR remaining LESS 3)
      message(FATAL_ERROR "${who}: expected REPLACE old new, got: ${rest}")
    endif()
    list(GET rest 1 old)
    list(GET rest 2 new)
    list(REMOVE_AT rest 0 1 2)
    string(FIND "${text}" "${old}" found)
    if(found EQUAL -1)
      message(FATAL_ERROR "${who}: the text to replace is not in ${source_name} any more:\n${old}")
    endif()
    string(REPLACE "${old}" "${new}" text "${text}")
  endwhile()
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()
