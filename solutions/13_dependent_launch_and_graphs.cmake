# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 13's exercise: exercise_solution() applies it to the
# exercise and builds <chapter>_exercise_solved, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 13: a PDL consumer reads before cudaGridDependencySynchronize; the fix reads
# after it. exercise_solution() passes its texts through a CMake list, so they contain no ';': the
# wait moves into the read through the comma operator.
exercise_solution(
  REPLACE [=[const unsigned int x = data[i]]=]
          [=[const unsigned int x = (cudaGridDependencySynchronize(), data[i])]=])
