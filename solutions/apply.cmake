# Applies one solution file to a copy of its exercise, outside a build (scripts/make_handout.sh
# --solved, which writes the tree that the grader must give full marks):
#
#   cmake -DSOLUTION=solutions/NN_topic.cmake -DEXERCISE_SOURCE=chapters/NN_topic/exercise.cu
#         -DOUTPUT=path -P solutions/apply.cmake
#
# The same replacements as exercise_solution() in a build (cmake/SolutionReplace.cmake): each
# `old` text must occur in the exercise.
foreach(variable IN ITEMS SOLUTION EXERCISE_SOURCE OUTPUT)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "apply.cmake: -D${variable}=... is required")
  endif()
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/SolutionReplace.cmake)
function(exercise_solution)
  cuda_streams_replace(text ${EXERCISE_SOURCE} ${SOLUTION} ${ARGN})
  file(WRITE ${OUTPUT} "${text}")
endfunction()
include(${SOLUTION})
