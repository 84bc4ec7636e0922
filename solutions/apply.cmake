# Applies one solution file to a copy of its exercise, outside a build (scripts/make_handout.sh
# --solved, which writes the tree that the grader must give full marks):
#
#   cmake -DSOLUTION=solutions/NN_topic.cmake -DEXERCISE_SOURCE=chapters/NN_topic/exercise.cu
#         -DOUTPUT=path -P solutions/apply.cmake
#
# The same replacements as exercise_solution() in cmake/CudaStreamsChapter.cmake: each `old`
# text must occur in the exercise.
foreach(variable IN ITEMS SOLUTION EXERCISE_SOURCE OUTPUT)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "apply.cmake: -D${variable}=... is required")
  endif()
endforeach()
function(exercise_solution)
  file(READ ${EXERCISE_SOURCE} text)
  set(rest ${ARGN})
  while(rest)
    list(LENGTH rest remaining)
    list(GET rest 0 keyword)
    if(NOT keyword STREQUAL "REPLACE" OR remaining LESS 3)
      message(FATAL_ERROR "exercise_solution: expected REPLACE old new, got: ${rest}")
    endif()
    list(GET rest 1 old)
    list(GET rest 2 new)
    list(REMOVE_AT rest 0 1 2)
    string(FIND "${text}" "${old}" found)
    if(found EQUAL -1)
      message(FATAL_ERROR "${SOLUTION}: the text to replace is not in ${EXERCISE_SOURCE}:\n${old}")
    endif()
    string(REPLACE "${old}" "${new}" text "${text}")
  endwhile()
  file(WRITE ${OUTPUT} "${text}")
endfunction()
include(${SOLUTION})
