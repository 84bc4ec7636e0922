# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 11's exercise: exercise_solution() applies it to the
# exercise and writes <chapter>_exercise_solved.py, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 11 (Python): inside `with torch.cuda.stream(side)` the current stream is
# `side` itself, so side.wait_stream(current_stream()) waits for nothing; the fix names the
# producer's stream, the default stream.
exercise_solution(
  REPLACE [[side.wait_stream(torch.cuda.current_stream())]]
          [[side.wait_stream(torch.cuda.default_stream())]])
