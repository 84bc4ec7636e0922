# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 12's exercise: exercise_solution() applies it to the
# exercise and builds <chapter>_exercise_solved, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 12: stream A waits on a flag for a value it already holds, so its consumer
# reads before stream B's producer wrote; the fix waits for the value B writes after its producer.
exercise_solution(
  REPLACE [=[const cuuint32_t ready = round;]=]
          [=[const cuuint32_t ready = round + 1;]=])
