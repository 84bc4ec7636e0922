# CUDA_STREAMS_SOLUTION_FILE (a marker that no handout may contain)
# The instructor's solution of chapter 06's exercise: exercise_solution() applies it to the
# exercise and builds <chapter>_exercise_solved, which runs the students' tests
# (tests/exercises/<chapter>.cmake). scripts/make_handout.sh leaves solutions/ out.
# Exercise of chapter 06: the split job hard-codes the seed's two devices and creates every
# slice's stream and memory with the home device current; the fix splits over every device of the
# machine and creates each slice's resources on its own device. exercise_solution() passes its
# texts through a CMake list, so they contain no ';'.
exercise_solution(
  REPLACE [[const std::vector<int> devices = {home, home + 1}]]
          [[const std::vector<int> devices = machine_devices(home)]]
  REPLACE [[CurrentDevice scope(home)]] [[CurrentDevice scope(slice.device)]])
