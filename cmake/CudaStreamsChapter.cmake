# cuda_streams_chapter(): adds the chapter whose folder calls it.
#
#   cuda_streams_chapter([SOURCE file.cu] [MIN_TOOLKIT version]
#                        [VARIANT suffix VARIANT_FLAGS nvcc-flags...]
#                        [LIBRARIES targets...])
#
# The folder's name (NN_topic) names the executable, which goes to
# <build>/bin/NN_topic. SOURCE defaults to <topic>.cu. VARIANT builds the same
# source a second time as NN_topic_<suffix> with extra nvcc flags (chapter 02's
# --default-stream per-thread build). MIN_TOOLKIT leaves the chapter out, saying
# why, where the CUDA Toolkit is older (chapter 13: 12.3). LIBRARIES are linked
# into every executable of the chapter, its exercise and the exercise's solution
# (chapter 14: CUDA::cublas, CUDA::curand, CUDA::cufft from
# find_package(CUDAToolkit)). The chapter's tests are declared in
# tests/chapters/NN_topic.cmake with chapter_test(); every executable also gets
# the two argument tests that run without a GPU (an unknown flag exits 2, --help
# exits 0). The README and the source become pages of the documentation.

include(${CMAKE_CURRENT_LIST_DIR}/SolutionReplace.cmake)
set(CUDA_STREAMS_EXPECT_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/../tests/expect.sh)
set(CUDA_STREAMS_SANITIZE_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/../tests/sanitize.sh)
find_program(CUDA_STREAMS_SANITIZER compute-sanitizer HINTS ${CUDAToolkit_BIN_DIR} ${CUDAToolkit_BIN_DIR}/../compute-sanitizer)
if(CUDA_STREAMS_SANITIZER)
  message(STATUS "cuda-streams: compute-sanitizer found: the 'sanitizer' tests are registered")
endif()

# Records @p chapter (and its program @p source, relative to the chapter folder) for the
# documentation: its lesson becomes a page, in folder order, ending in its program's source.
function(cuda_streams_register_chapter chapter source)
  set_property(GLOBAL APPEND PROPERTY CUDA_STREAMS_CHAPTERS ${chapter})
  set_property(GLOBAL PROPERTY CUDA_STREAMS_CHAPTER_SOURCE_${chapter} chapters/${chapter}/${source})
endfunction()

function(cuda_streams_chapter)
  cmake_parse_arguments(ARG "" "SOURCE;VARIANT;MIN_TOOLKIT" "VARIANT_FLAGS;LIBRARIES" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "cuda_streams_chapter: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  get_filename_component(chapter ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  string(REGEX REPLACE "^[0-9][0-9]_" "" topic ${chapter})
  if(NOT ARG_SOURCE)
    set(ARG_SOURCE ${topic}.cu)
  endif()
  # A chapter whose program uses types a toolkit does not have yet is left out, saying why,
  # rather than failing the build of every chapter.
  if(ARG_MIN_TOOLKIT AND CUDAToolkit_VERSION VERSION_LESS ARG_MIN_TOOLKIT)
    message(STATUS "cuda-streams: chapter ${chapter} skipped: it needs CUDA Toolkit "
                   "${ARG_MIN_TOOLKIT} or newer to compile; this one is ${CUDAToolkit_VERSION}")
    cuda_streams_register_chapter(${chapter} ${ARG_SOURCE})
    return()
  endif()

  set(executables ${chapter})
  add_executable(${chapter} ${ARG_SOURCE})
  if(ARG_VARIANT)
    add_executable(${chapter}_${ARG_VARIANT} ${ARG_SOURCE})
    target_compile_options(${chapter}_${ARG_VARIANT} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${ARG_VARIANT_FLAGS}>)
    list(APPEND executables ${chapter}_${ARG_VARIANT})
  endif()
  # Seen by cuda_streams_exercise() and exercise_solution(), which this function calls.
  set(CUDA_STREAMS_CHAPTER_LIBRARIES ${ARG_LIBRARIES})
  foreach(exe IN LISTS executables)
    target_link_libraries(${exe} PRIVATE cuda_streams::common ${CUDA_STREAMS_CHAPTER_LIBRARIES})
    cuda_streams_warnings(${exe})
  endforeach()

  cuda_streams_register_chapter(${chapter} ${ARG_SOURCE})

  if(CUDA_STREAMS_TESTS)
    foreach(exe IN LISTS executables)
      chapter_test(NAME args.unknown_flag EXE ${exe} ARGS --no-such-flag EXIT 2
                   MATCH "unknown flag '--no-such-flag'" LABELS args host)
      chapter_test(NAME args.help EXE ${exe} ARGS --help EXIT 0 MATCH "--device" "--help" LABELS args host)
    endforeach()
    set(test_file ${PROJECT_SOURCE_DIR}/tests/chapters/${chapter}.cmake)
    if(NOT EXISTS ${test_file})
      message(FATAL_ERROR "chapter ${chapter} has no tests: expected ${test_file}")
    endif()
    set(CHAPTER ${chapter})
    include(${test_file})
    if(CUDA_STREAMS_EXERCISES AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/exercise.cu)
      cuda_streams_exercise(${chapter})
    endif()
    cuda_streams_isolate_tests()
  endif()
endfunction()

# cuda_streams_isolate_tests(): every test of the current directory runs with
# CUDA_LAUNCH_BLOCKING, CUDA_DEVICE_MAX_CONNECTIONS and CUDA_STREAMS_CONTROL unset, except the one
# a test sets itself
# (its ENVIRONMENT): a value left in the caller's shell would otherwise turn a test's checks into
# skips, or its broken variant into a pass. Called once a directory has added its tests.
function(cuda_streams_isolate_tests)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    get_test_property(${test} ENVIRONMENT environment)
    set(modifications "")
    foreach(variable IN ITEMS CUDA_LAUNCH_BLOCKING CUDA_DEVICE_MAX_CONNECTIONS CUDA_STREAMS_CONTROL)
      if(NOT "${environment}" MATCHES "(^|;)${variable}=")
        list(APPEND modifications "${variable}=unset:")
      endif()
    endforeach()
    if(modifications)
      set_tests_properties(${test} PROPERTIES ENVIRONMENT_MODIFICATION "${modifications}")
    endif()
  endforeach()
endfunction()

# Builds the exercise of chapter NN_topic: chapters/NN_topic/exercise.cu as NN_topic_exercise
# (exercise.py: a script that the tests run with Python, registered from tests/CMakeLists.txt).
#
# Two trees come from one source. The students' tests, with what the exercise as given must fail
# (FAILS_WITH), are in tests/exercises/NN_topic.cmake (exercise_test(), exercise_args_test()): the
# handout has them. The instructor's fix is in CUDA_STREAMS_SOLUTIONS_DIR/NN_topic.cmake
# (default solutions/; exercise_solution()), which scripts/make_handout.sh leaves out: where it
# is absent, the exercise and its tests are registered without the _solved build and its tests,
# and the configure step goes on. CUDA_STREAMS_EXERCISE_ROOT (default: this source tree) is the
# tree whose chapters/NN_topic/exercise.* is built: scripts/grade.sh points it at a student's
# tree, so that the student's exercises run against this tree's tests, common/ and cmake/.
#
# Test labels: `exercise` for the students' tests (<chapter>_exercise.exercise[.name]) only;
# `solved` for the same tests on the solved build, `as_given` for the tests that the exercise as
# handed out fails the way its lesson says; `args` and `host` for the bad command lines.
function(cuda_streams_exercise chapter)
  set(test_file ${PROJECT_SOURCE_DIR}/tests/exercises/${chapter}.cmake)
  if(NOT EXISTS ${test_file})
    message(FATAL_ERROR "chapter ${chapter} has an exercise but no ${test_file} (its tests)")
  endif()
  set(root ${PROJECT_SOURCE_DIR})
  if(CUDA_STREAMS_EXERCISE_ROOT)
    get_filename_component(root "${CUDA_STREAMS_EXERCISE_ROOT}" ABSOLUTE)
  endif()
  set(EXERCISE ${chapter}_exercise)
  set(EXERCISE_SOURCE "")        # the exercise that is built and tested (EXERCISE_ROOT's)
  set(EXERCISE_GIVEN_SOURCE "")  # this tree's, as given: what a solution applies to
  foreach(name IN ITEMS exercise.cu exercise.py)
    if(EXISTS ${PROJECT_SOURCE_DIR}/chapters/${chapter}/${name})
      set(EXERCISE_SOURCE ${root}/chapters/${chapter}/${name})
      set(EXERCISE_GIVEN_SOURCE ${PROJECT_SOURCE_DIR}/chapters/${chapter}/${name})
    endif()
  endforeach()
  if(NOT EXERCISE_SOURCE OR NOT EXISTS "${EXERCISE_SOURCE}")
    message(STATUS "cuda-streams: exercise ${chapter} skipped: ${EXERCISE_SOURCE} does not exist")
    return()
  endif()
  set_property(DIRECTORY PROPERTY CUDA_STREAMS_EXERCISE_TESTS "")
  # "student" (the exercise as built from EXERCISE_ROOT), and "solved" once a solution is built.
  set(EXERCISE_VARIANTS student)
  if(EXERCISE_SOURCE MATCHES "\\.py$")
    if(NOT CUDA_STREAMS_EXERCISE_PYTHON)
      find_program(CUDA_STREAMS_EXERCISE_PYTHON NAMES python3 python
                   DOC "Python interpreter that runs the Python exercises")
    endif()
    if(NOT CUDA_STREAMS_EXERCISE_PYTHON)
      message(STATUS "cuda-streams: exercise ${chapter} skipped: no python3 found")
      return()
    endif()
    set(EXERCISE_SCRIPT ${EXERCISE_SOURCE})
  else()
    add_executable(${EXERCISE} ${EXERCISE_SOURCE})
    target_link_libraries(${EXERCISE} PRIVATE cuda_streams::common ${CUDA_STREAMS_CHAPTER_LIBRARIES})
    cuda_streams_warnings(${EXERCISE})
  endif()
  set(solutions_dir ${PROJECT_SOURCE_DIR}/solutions)
  if(DEFINED CUDA_STREAMS_SOLUTIONS_DIR)
    set(solutions_dir "${CUDA_STREAMS_SOLUTIONS_DIR}")
  endif()
  if(solutions_dir AND EXISTS ${solutions_dir}/${chapter}.cmake)
    include(${solutions_dir}/${chapter}.cmake)  # exercise_solution(): appends "solved"
  endif()
  set(EXERCISE_TARGETS "")  # the executables, for the tests' own chapter_test() calls
  if(TARGET ${EXERCISE})
    list(APPEND EXERCISE_TARGETS ${EXERCISE})
  endif()
  if("solved" IN_LIST EXERCISE_VARIANTS AND TARGET ${EXERCISE}_solved)
    list(APPEND EXERCISE_TARGETS ${EXERCISE}_solved)
  endif()
  if(TARGET ${EXERCISE})
    chapter_test(NAME args.unknown_flag EXE ${EXERCISE} ARGS --no-such-flag EXIT 2
                 MATCH "unknown flag '--no-such-flag'" LABELS args host)
  endif()
  include(${test_file})
  get_property(exercise_tests DIRECTORY PROPERTY CUDA_STREAMS_EXERCISE_TESTS)
  if(NOT exercise_tests)
    message(FATAL_ERROR "${test_file} registers no exercise_test(): the exercise would be "
                        "built but never run")
  endif()
endfunction()

# exercise_solution(REPLACE old new [REPLACE old new ...])
#
# In CUDA_STREAMS_SOLUTIONS_DIR/<chapter>.cmake: writes the exercise's source with each `old`
# text replaced by `new` (each must occur) and builds it as <chapter>_exercise_solved (a Python
# exercise: writes exercise_solved.py, which the tests run). The texts travel as a CMake list, so
# neither may contain a ';': write a fix as a change inside a statement (or join statements with
# the comma operator).
function(exercise_solution)
  cuda_streams_replace(text ${EXERCISE_GIVEN_SOURCE} "exercise_solution for ${EXERCISE}" ${ARGN})
  get_filename_component(extension ${EXERCISE_GIVEN_SOURCE} LAST_EXT)
  set(solved ${CMAKE_CURRENT_BINARY_DIR}/${EXERCISE}_solved${extension})
  file(WRITE ${solved} "${text}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${EXERCISE_GIVEN_SOURCE})
  if(extension STREQUAL ".py")
    set(EXERCISE_SOLVED_SCRIPT ${solved} PARENT_SCOPE)
  else()
    add_executable(${EXERCISE}_solved ${solved})
    target_link_libraries(${EXERCISE}_solved PRIVATE cuda_streams::common
                          ${CUDA_STREAMS_CHAPTER_LIBRARIES})
    cuda_streams_warnings(${EXERCISE}_solved)
  endif()
  set(EXERCISE_VARIANTS ${EXERCISE_VARIANTS} solved PARENT_SCOPE)
endfunction()

# The test name's prefix of a variant (student: <chapter>_exercise, solved:
# <chapter>_exercise_solved) and the command that runs it.
function(_cuda_streams_exercise_command out_prefix out_command variant)
  set(suffix "")
  set(script ${EXERCISE_SCRIPT})
  if(variant STREQUAL "solved")
    set(suffix _solved)
    set(script ${EXERCISE_SOLVED_SCRIPT})
  endif()
  set(${out_prefix} ${EXERCISE}${suffix} PARENT_SCOPE)
  if(EXERCISE_SCRIPT)
    set(${out_command} ${CUDA_STREAMS_EXERCISE_PYTHON} ${script} PARENT_SCOPE)
  else()
    set(${out_command} $<TARGET_FILE:${EXERCISE}${suffix}> PARENT_SCOPE)
  endif()
endfunction()

# One test of the exercise: NAME (e.g. exercise.two_streams), the variant (student or solved), the
# exit codes, the regexes and labels: as chapter_test(), for a program or a Python script.
function(_cuda_streams_exercise_add_test name variant)
  cmake_parse_arguments(ARG "" "" "ARGS;EXIT;MATCH;NO_MATCH;ENV;LABELS" ${ARGN})
  if(NOT DEFINED ARG_EXIT)
    set(ARG_EXIT 0)
  endif()
  _cuda_streams_expect_args(expect_args)
  _cuda_streams_exercise_command(prefix command ${variant})
  set(test_name ${prefix}.${name})
  add_test(NAME ${test_name} COMMAND bash ${CUDA_STREAMS_EXPECT_SCRIPT} ${expect_args} -- ${command} ${ARG_ARGS})
  set_tests_properties(${test_name} PROPERTIES LABELS "${ARG_LABELS}" SKIP_RETURN_CODE 77 TIMEOUT 300)
  if(EXERCISE_SCRIPT)
    list(APPEND ARG_ENV PYTHONUNBUFFERED=1)
  endif()
  if(ARG_ENV)
    set_tests_properties(${test_name} PROPERTIES ENVIRONMENT "${ARG_ENV}")
  endif()
  if("timing" IN_LIST ARG_LABELS)
    set_tests_properties(${test_name} PROPERTIES RUN_SERIAL TRUE)
  endif()
endfunction()

# exercise_test([NAME name] [ARGS ...] [MATCH ...] [NO_MATCH ...] [ENV ...] [TIMING]
#               FAILS_WITH check... [GIVEN_EXIT code])
#
# The test that a student's exercise must pass: <chapter>_exercise.exercise[.name], label
# `exercise` (it fails until the exercise is fixed); where the solution is present, the same test
# of the solved build, <chapter>_exercise_solved.exercise[.name], label `solved` (it must pass).
# FAILS_WITH (required) names the check, or checks, that the exercise as given fails:
# <chapter>_exercise.exercise[.name].as_given, label `as_given`, runs the exercise with the same
# ARGS and ENV and passes when it exits GIVEN_EXIT (default 1) and prints
# `CHECK <check>: ... FAIL` for each of them, so that an exercise that passes unsolved, or fails
# for another reason than its lesson, is noticed. It guards the exercise as shipped: once a
# student has solved their copy it fails (students run `ctest --preset exercises`, which selects
# the label `exercise` only). Every one is labelled gpu too, and timing with TIMING.
function(exercise_test)
  cmake_parse_arguments(ARG "TIMING" "NAME;GIVEN_EXIT" "ARGS;MATCH;NO_MATCH;ENV;FAILS_WITH" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "exercise_test for ${EXERCISE}: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  set(name exercise)
  if(ARG_NAME)
    set(name exercise.${ARG_NAME})
  endif()
  if(NOT ARG_FAILS_WITH)
    message(FATAL_ERROR "exercise_test ${EXERCISE}.${name}: FAILS_WITH is required: name the check "
                        "that the exercise as given fails (its CHECK line ends in FAIL)")
  endif()
  if(NOT DEFINED ARG_GIVEN_EXIT)
    set(ARG_GIVEN_EXIT 1)
  endif()
  set(extra_labels gpu)
  if(ARG_TIMING)
    list(APPEND extra_labels timing)
  endif()
  set(given_match "")
  foreach(check IN LISTS ARG_FAILS_WITH)
    if(NOT check MATCHES "^[a-z0-9_]+$")
      message(FATAL_ERROR "exercise_test ${EXERCISE}.${name}: FAILS_WITH '${check}' is not a check name")
    endif()
    list(APPEND given_match "CHECK ${check}: .* FAIL")
  endforeach()
  foreach(variant IN LISTS EXERCISE_VARIANTS)
    set(label exercise)
    if(variant STREQUAL "solved")
      set(label solved)
    endif()
    _cuda_streams_exercise_add_test(${name} ${variant} ARGS ${ARG_ARGS} MATCH ${ARG_MATCH}
                                    NO_MATCH ${ARG_NO_MATCH} ENV ${ARG_ENV}
                                    LABELS ${label} ${extra_labels})
  endforeach()
  _cuda_streams_exercise_add_test(${name}.as_given student ARGS ${ARG_ARGS} EXIT ${ARG_GIVEN_EXIT}
                                  MATCH ${given_match} ENV ${ARG_ENV}
                                  LABELS as_given ${extra_labels})
  set_property(DIRECTORY APPEND PROPERTY CUDA_STREAMS_EXERCISE_TESTS ${name})
endfunction()

# exercise_args_test(NAME name ARGS ... [EXIT code] MATCH regex...)
#
# A bad command line of the exercise and of its solved build: <chapter>_exercise[_solved].NAME,
# exit 2 (default) and MATCH, before any CUDA call. Labels: args, host.
function(exercise_args_test)
  cmake_parse_arguments(ARG "" "NAME" "ARGS;EXIT;MATCH" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS OR NOT ARG_NAME OR NOT ARG_MATCH)
    message(FATAL_ERROR "exercise_args_test: needs NAME and MATCH (got: ${ARGN})")
  endif()
  if(NOT DEFINED ARG_EXIT)
    set(ARG_EXIT 2)
  endif()
  foreach(variant IN LISTS EXERCISE_VARIANTS)
    _cuda_streams_exercise_add_test(${ARG_NAME} ${variant} ARGS ${ARG_ARGS} EXIT ${ARG_EXIT}
                                    MATCH ${ARG_MATCH} LABELS args host)
  endforeach()
endfunction()

# Sets OUT_VAR to tests/expect.sh's arguments from the caller's ARG_EXIT, ARG_MATCH and
# ARG_NO_MATCH (cmake_parse_arguments' results, seen here through the caller's scope).
function(_cuda_streams_expect_args out_var)
  set(args "")
  foreach(code IN LISTS ARG_EXIT)
    list(APPEND args --exit ${code})
  endforeach()
  foreach(regex IN LISTS ARG_MATCH)
    list(APPEND args --match "${regex}")
  endforeach()
  foreach(regex IN LISTS ARG_NO_MATCH)
    list(APPEND args --no-match "${regex}")
  endforeach()
  set(${out_var} "${args}" PARENT_SCOPE)
endfunction()

# chapter_test(NAME name [EXE target] [ARGS args...] [EXIT codes...] [MATCH regex...]
#              [NO_MATCH regex...] [ENV VAR=value...] LABELS labels... [TIMEOUT seconds])
#
# Registers the test <chapter>.<name> (the executable's name stands for the
# chapter when EXE is a variant): it runs the executable with ARGS and passes
# when the exit status is one of EXIT (default 0; several where the lesson says
# either outcome may happen), every MATCH regex is found in the output and no
# NO_MATCH regex is. Exit status 77 (SKIP:) reports "skipped", or fails under
# CUDA_STREAMS_STRICT=1 unless the runner allowed its reason (tests/expect.sh).
# LABELS must include one of gpu, host or args; tests labelled timing run
# alone (RUN_SERIAL), since other work on the GPU would disturb them.
function(chapter_test)
  cmake_parse_arguments(ARG "" "NAME;EXE;TIMEOUT" "ARGS;EXIT;MATCH;NO_MATCH;ENV;LABELS" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS OR NOT ARG_NAME OR NOT ARG_LABELS)
    message(FATAL_ERROR "chapter_test: needs NAME and LABELS (got: ${ARGN})")
  endif()
  if(NOT ARG_EXE)
    set(ARG_EXE ${CHAPTER})
  endif()
  if(NOT DEFINED ARG_EXIT)
    set(ARG_EXIT 0)
  endif()
  if(NOT "gpu" IN_LIST ARG_LABELS AND NOT "host" IN_LIST ARG_LABELS AND NOT "args" IN_LIST ARG_LABELS)
    message(FATAL_ERROR "chapter_test ${ARG_NAME}: LABELS must include gpu, host or args")
  endif()
  # The variations: each command a lesson suggests (try.*) and each flag at its extremes
  # (extremes.*, extreme.*) carry the label `extended`, which `ctest --preset extended` runs and
  # the quicker default preset leaves out.
  if(ARG_NAME MATCHES "^(try|extremes?)\\.")
    list(APPEND ARG_LABELS extended)
  endif()
  _cuda_streams_expect_args(expect_args)
  set(test_name ${ARG_EXE}.${ARG_NAME})
  add_test(NAME ${test_name}
           COMMAND bash ${CUDA_STREAMS_EXPECT_SCRIPT} ${expect_args} -- $<TARGET_FILE:${ARG_EXE}> ${ARG_ARGS})
  set_tests_properties(${test_name} PROPERTIES LABELS "${ARG_LABELS}" SKIP_RETURN_CODE 77)
  if(ARG_ENV)
    set_tests_properties(${test_name} PROPERTIES ENVIRONMENT "${ARG_ENV}")
  endif()
  if(ARG_TIMEOUT)
    set_tests_properties(${test_name} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  else()
    set_tests_properties(${test_name} PROPERTIES TIMEOUT 300)
  endif()
  if("timing" IN_LIST ARG_LABELS)
    set_tests_properties(${test_name} PROPERTIES RUN_SERIAL TRUE)
  endif()
endfunction()

# chapter_control(CHECK check [ARGS args...])
#
# The control of a check that measures overlap or a host running ahead: the program runs under
# CUDA_LAUNCH_BLOCKING=1, which removes that effect (every launch waits for its kernel), with
# CUDA_STREAMS_CONTROL=1, which keeps its bars from adapting to the setting: the check must print
# FAIL and the program exit 1. Named control.launch_blocking.<check>; labels gpu, timing, control.
function(chapter_control)
  cmake_parse_arguments(ARG "" "CHECK" "ARGS" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS OR NOT ARG_CHECK)
    message(FATAL_ERROR "chapter_control: needs CHECK (got: ${ARGN})")
  endif()
  chapter_test(NAME control.launch_blocking.${ARG_CHECK} ARGS ${ARG_ARGS} EXIT 1
               ENV CUDA_LAUNCH_BLOCKING=1 CUDA_STREAMS_CONTROL=1 LABELS gpu timing control
               MATCH "Control run: CUDA_LAUNCH_BLOCKING=1" "CHECK ${ARG_CHECK}: .* FAIL")
endfunction()

# chapter_bad_values(FLAG flag EXPECT "message with <value>" CASES name=value... [EXE target])
#
# One args test per case: `--flag value` must exit 2 with EXPECT, in which <value> stands for
# the case's value. The test is named args.<flag>_<name>.
function(chapter_bad_values)
  cmake_parse_arguments(ARG "" "FLAG;EXPECT;EXE" "CASES" ${ARGN})
  if(NOT ARG_FLAG OR NOT ARG_EXPECT OR NOT ARG_CASES)
    message(FATAL_ERROR "chapter_bad_values: needs FLAG, EXPECT and CASES (got: ${ARGN})")
  endif()
  set(exe_args "")
  if(ARG_EXE)
    set(exe_args EXE ${ARG_EXE})
  endif()
  foreach(case IN LISTS ARG_CASES)
    string(FIND "${case}" "=" equals)
    string(SUBSTRING "${case}" 0 ${equals} name)
    math(EXPR value_at "${equals} + 1")
    string(SUBSTRING "${case}" ${value_at} -1 value)
    string(REPLACE "<value>" "${value}" message "${ARG_EXPECT}")
    chapter_test(NAME args.${ARG_FLAG}_${name} ${exe_args} ARGS --${ARG_FLAG} ${value} EXIT 2
                 MATCH "${message}" LABELS args host)
  endforeach()
endfunction()

# chapter_integer_flags(FLAG:MIN:MAX...)
#
# The args tests of integer flags: for each, `--FLAG` with its minimum minus one (and 0 where the
# minimum is above 1), a negative number, a word and its maximum plus one must exit 2 with
# "--FLAG expects an integer from MIN to MAX, got '<value>'".
function(chapter_integer_flags)
  foreach(spec IN LISTS ARGN)
    string(REPLACE ":" ";" fields "${spec}")
    list(LENGTH fields count)
    if(NOT count EQUAL 3)
      message(FATAL_ERROR "chapter_integer_flags: '${spec}' is not FLAG:MIN:MAX")
    endif()
    list(GET fields 0 flag)
    list(GET fields 1 min)
    list(GET fields 2 max)
    math(EXPR too_big "${max} + 1")
    set(cases negative=-3 not_a_number=ten too_big=${too_big})
    if(min GREATER 0)
      math(EXPR too_small "${min} - 1")
      list(APPEND cases below_min=${too_small})
    endif()
    if(min GREATER 1)
      list(APPEND cases zero=0)
    endif()
    chapter_bad_values(FLAG ${flag} CASES ${cases}
                       EXPECT "--${flag} expects an integer from ${min} to ${max}, got '<value>'")
  endforeach()
endfunction()

# chapter_sanitizer_tests([EXE target] [NAME name] [ARGS args...] [TOOLS tools...])
#
# Where compute-sanitizer is found, runs the executable under each tool
# (default: memcheck with leak checking, racecheck, synccheck, initcheck), giving --no-timing and
# ARGS to the program; each must report no error. The tests are named EXE.sanitizer.TOOL, or
# EXE.sanitizer_NAME.TOOL with NAME (several sets for one program). Labels: sanitizer, gpu.
function(chapter_sanitizer_tests)
  if(NOT CUDA_STREAMS_SANITIZER)
    return()
  endif()
  cmake_parse_arguments(ARG "" "EXE;NAME" "ARGS;TOOLS" ${ARGN})
  if(NOT ARG_EXE)
    set(ARG_EXE ${CHAPTER})
  endif()
  if(NOT ARG_TOOLS)
    set(ARG_TOOLS memcheck racecheck synccheck initcheck)
  endif()
  foreach(tool IN LISTS ARG_TOOLS)
    set(tool_args --tool ${tool})
    if(tool STREQUAL "memcheck")
      list(APPEND tool_args --leak-check full)
    endif()
    set(test_name ${ARG_EXE}.sanitizer.${tool})
    if(ARG_NAME)
      set(test_name ${ARG_EXE}.sanitizer_${ARG_NAME}.${tool})
    endif()
    add_test(NAME ${test_name}
             COMMAND bash ${CUDA_STREAMS_EXPECT_SCRIPT} --exit 0 --match "(ERROR|RACECHECK) SUMMARY: 0"
                     -- bash ${CUDA_STREAMS_SANITIZE_SCRIPT} ${CUDA_STREAMS_SANITIZER} ${tool_args}
                     --error-exitcode 99 -- $<TARGET_FILE:${ARG_EXE}> --no-timing ${ARG_ARGS})
    set_tests_properties(${test_name} PROPERTIES LABELS "sanitizer;gpu" SKIP_RETURN_CODE 77 TIMEOUT 120)
  endforeach()
endfunction()
