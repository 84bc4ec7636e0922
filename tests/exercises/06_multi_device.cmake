# The tests of chapter 06's exercise, chapters/06_multi_device/exercise.cu: what a student's
# program must print (exercise_test(), label exercise), what the exercise as handed out fails
# (FAILS_WITH, label as_given) and its bad command lines. They run the solved build too where
# the instructor's solutions/06_multi_device.cmake is present (label solved).

# On one GPU the exercise as given splits over a device the machine does not have: it says
# "SKIP: needs 2 devices (this machine has 1)" (cudaGetDeviceCount) and exits 77, so both its tests
# skip. On two or more, slice 1's stream and memory are on the home device (CHECK ... FAIL), then
# its launch into that stream is refused (exit 1). The solution passes on any number of devices.
exercise_test(FAILS_WITH memory_placement stream_placement
              MATCH "CHECK every_device_once: .* PASS"
                    "CHECK memory_placement: 0 of [0-9]+ buffers .* PASS"
                    "CHECK stream_placement: 0 of [0-9]+ streams .* PASS"
                    "CHECK current_device_restored: .* PASS"
                    "CHECK split_result: 0 of 4194304 values differ from the CPU reference ... PASS"
                    "All [1-9][0-9]* checks passed"
              NO_MATCH "FAIL")

foreach(exe IN LISTS EXERCISE_TARGETS)
  chapter_test(NAME args.elements_zero EXE ${exe} ARGS --elements 0 EXIT 2
               MATCH "--elements expects .*got '0'" LABELS args host)
  chapter_test(NAME args.steps_too_big EXE ${exe} ARGS --steps 100001 EXIT 2
               MATCH "--steps expects an integer from 1 to 100000, got '100001'"
               LABELS args host)
endforeach()
