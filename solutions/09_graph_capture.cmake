# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 09's exercise: exercise_solution() applies it to the
# exercise and builds <chapter>_exercise_solved, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 09: the join loop leaves out the last forked stream, so
# cudaStreamEndCapture refuses to end the capture; the fix joins every stream that was forked.
# exercise_solution() passes its texts through a CMake list, so they contain no ';'.
exercise_solution(REPLACE [[s < stream_count - 1]] [[s < stream_count]])
