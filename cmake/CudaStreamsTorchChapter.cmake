# cuda_streams_torch_chapter(): adds the chapter whose folder calls it, a program on the
# PyTorch C++ API (chapter 11), built only where libtorch is found.
#
#   cuda_streams_torch_chapter([SOURCE file.cpp] [SCRIPT file.py])
#
# The folder's name (NN_topic) names the executable, <build>/bin/NN_topic, built from
# SOURCE (default <topic>.cpp) with the host compiler against libtorch and common/.
# SCRIPT (default <topic>.py) is the same lesson in Python; it becomes a test where
# the configured Python interpreter can import torch.
#
# Where libtorch is:
#   - Torch_DIR or CMAKE_PREFIX_PATH (as variables or in the environment), or
#   - the prefix that `python3 -c 'import torch; print(torch.utils.cmake_prefix_path)'`
#     prints, where python3 is Python3_EXECUTABLE if given, else the first on PATH.
#
# TorchConfig.cmake stops the whole configure with an error when a piece it expects is
# missing (a CUDA version that differs from the one torch was built with, libraries left
# out of an install, ...). So find_package(Torch) first runs in a separate trial
# configure; only if that succeeds does this project call it. Otherwise CMake prints
# one line, "chapter NN skipped: <why>", and the rest of the project builds. The trial's
# result is kept in the cache until the inputs above change.
#
# The README and the source become pages of the documentation in every case.
# -DCUDA_STREAMS_TORCH=OFF skips the chapter without looking for torch.

include_guard(GLOBAL)

option(CUDA_STREAMS_TORCH "Build chapter 11 (the PyTorch C++ API) where libtorch is found" ON)

# The Python interpreter to ask about torch (and to run the chapter's script with).
function(_cuda_streams_torch_python out_python)
  if(Python3_EXECUTABLE)
    set(${out_python} "${Python3_EXECUTABLE}" PARENT_SCOPE)
    return()
  endif()
  find_program(CUDA_STREAMS_PYTHON3 NAMES python3 python
               DOC "Python interpreter that chapter 11 asks where torch is (set Python3_EXECUTABLE to choose)")
  if(CUDA_STREAMS_PYTHON3)
    set(${out_python} "${CUDA_STREAMS_PYTHON3}" PARENT_SCOPE)
  else()
    set(${out_python} "" PARENT_SCOPE)
  endif()
endfunction()

# Asks @p python whether it can import torch; sets <out>_OK, <out>_PREFIX, <out>_VERSION, <out>_WHY.
# The answer is kept for the configure run (chapters 11 and 12 both ask; an import takes seconds).
function(_cuda_streams_torch_ask_python python out)
  get_property(asked GLOBAL PROPERTY cuda_streams_torch_asked)
  if(NOT asked STREQUAL "${python}")
    _cuda_streams_torch_ask_python_once("${python}" answer)
    set_property(GLOBAL PROPERTY cuda_streams_torch_asked "${python}")
    foreach(field OK PREFIX VERSION WHY)
      set_property(GLOBAL PROPERTY cuda_streams_torch_${field} "${answer_${field}}")
    endforeach()
  endif()
  foreach(field OK PREFIX VERSION WHY)
    get_property(value GLOBAL PROPERTY cuda_streams_torch_${field})
    set(${out}_${field} "${value}" PARENT_SCOPE)
  endforeach()
endfunction()

function(_cuda_streams_torch_ask_python_once python out)
  set(${out}_OK FALSE PARENT_SCOPE)
  set(${out}_PREFIX "" PARENT_SCOPE)
  set(${out}_VERSION "" PARENT_SCOPE)
  if(NOT python)
    set(${out}_WHY "no python3 found" PARENT_SCOPE)
    return()
  endif()
  execute_process(
    COMMAND "${python}" -c "import torch, torch.utils; print(torch.utils.cmake_prefix_path); print(torch.__version__)"
    RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors TIMEOUT 180)
  if(NOT status EQUAL 0)
    string(REGEX MATCH "[A-Za-z]*Error[^\n]*" reason "${errors}")
    if(NOT reason)
      set(reason "exit status ${status}")
    endif()
    set(${out}_WHY "${python} cannot import torch (${reason})" PARENT_SCOPE)
    return()
  endif()
  string(STRIP "${output}" output)
  string(REPLACE "\n" ";" lines "${output}")
  list(LENGTH lines count)
  if(count LESS 2)
    set(${out}_WHY "${python} printed no torch prefix" PARENT_SCOPE)
    return()
  endif()
  list(GET lines 0 prefix)
  list(GET lines 1 version)
  set(${out}_OK TRUE PARENT_SCOPE)
  set(${out}_WHY "" PARENT_SCOPE)
  set(${out}_PREFIX "${prefix}" PARENT_SCOPE)
  set(${out}_VERSION "${version}" PARENT_SCOPE)
endfunction()

# Runs find_package(Torch) in a throwaway project; sets <out>_OK, <out>_DIR (Torch_DIR) and
# <out>_WHY (the first error line, where it failed).
function(_cuda_streams_torch_trial python prefix_path out)
  set(trial ${CMAKE_BINARY_DIR}/cuda_streams_torch_trial)
  file(REMOVE_RECURSE ${trial}/build)
  file(WRITE ${trial}/src/CMakeLists.txt [=[
cmake_minimum_required(VERSION 3.24)
project(cuda_streams_torch_trial LANGUAGES CXX CUDA)
find_package(Torch CONFIG REQUIRED)
if(NOT TARGET torch)
  message(FATAL_ERROR "TorchConfig.cmake defined no 'torch' target")
endif()
if(NOT TARGET c10_cuda)
  message(FATAL_ERROR "this torch was built without CUDA (no c10_cuda target)")
endif()
file(WRITE ${CMAKE_BINARY_DIR}/torch_dir.txt "${Torch_DIR}")
]=])
  # The settings go through an initial-cache script, so that lists (CMAKE_PREFIX_PATH,
  # CMAKE_CUDA_ARCHITECTURES) arrive whole.
  set(settings CMAKE_CXX_COMPILER CMAKE_CUDA_COMPILER CMAKE_CUDA_HOST_COMPILER
               CMAKE_CUDA_ARCHITECTURES CMAKE_MAKE_PROGRAM Torch_DIR)
  set(init "")
  foreach(setting IN LISTS settings)
    if(${setting})
      string(APPEND init "set(${setting} [==[${${setting}}]==] CACHE STRING \"\")\n")
    endif()
  endforeach()
  string(APPEND init "set(CMAKE_PREFIX_PATH [==[${prefix_path}]==] CACHE STRING \"\")\n")
  if(python)
    string(APPEND init "set(Python_EXECUTABLE [==[${python}]==] CACHE FILEPATH \"\")\n")
  endif()
  file(WRITE ${trial}/init.cmake "${init}")
  set(args -C ${trial}/init.cmake -S ${trial}/src -B ${trial}/build -G "${CMAKE_GENERATOR}")
  if(CMAKE_GENERATOR_PLATFORM)
    list(APPEND args -A "${CMAKE_GENERATOR_PLATFORM}")
  endif()
  if(CMAKE_GENERATOR_TOOLSET)
    list(APPEND args -T "${CMAKE_GENERATOR_TOOLSET}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} ${args}
                  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors TIMEOUT 600)
  file(WRITE ${trial}/trial.log "${output}\n${errors}")
  if(status EQUAL 0 AND EXISTS ${trial}/build/torch_dir.txt)
    file(READ ${trial}/build/torch_dir.txt torch_dir)
    set(${out}_OK TRUE PARENT_SCOPE)
    set(${out}_DIR "${torch_dir}" PARENT_SCOPE)
    set(${out}_WHY "" PARENT_SCOPE)
    return()
  endif()
  # The start of the first error's text, e.g. 'Could not find a package configuration file
  # provided by "Torch"' or 'Found two conflicting CUDA versions'.
  set(reason "")
  string(FIND "${errors}" "CMake Error" at)
  if(at GREATER -1)
    string(SUBSTRING "${errors}" ${at} 800 reason)
    string(FIND "${reason}" "\n" line_end)  # drop the "CMake Error at file:line" line
    if(line_end GREATER -1)
      math(EXPR line_end "${line_end} + 1")
      string(SUBSTRING "${reason}" ${line_end} -1 reason)
    endif()
    string(REGEX REPLACE "\n(Call Stack|CMake Error|-- ).*" "" reason "${reason}")
  else()
    string(REGEX MATCH "[^\n]+" reason "${errors}")
  endif()
  string(REGEX REPLACE "[ \t\r\n]+" " " reason "${reason}")
  string(STRIP "${reason}" reason)
  string(LENGTH "${reason}" length)
  if(length GREATER 200)
    string(SUBSTRING "${reason}" 0 197 reason)
    string(APPEND reason "...")
  endif()
  if(NOT reason)
    set(reason "exit status ${status}")
  endif()
  set(${out}_OK FALSE PARENT_SCOPE)
  set(${out}_DIR "" PARENT_SCOPE)
  set(${out}_WHY "find_package(Torch) failed in a trial configure: ${reason} (log: ${trial}/trial.log)"
      PARENT_SCOPE)
endfunction()

function(cuda_streams_torch_chapter)
  cmake_parse_arguments(ARG "" "SOURCE;SCRIPT" "" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "cuda_streams_torch_chapter: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  get_filename_component(chapter ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  string(REGEX REPLACE "^([0-9][0-9])_.*" "\\1" number ${chapter})
  string(REGEX REPLACE "^[0-9][0-9]_" "" topic ${chapter})
  if(NOT ARG_SOURCE)
    set(ARG_SOURCE ${topic}.cpp)
  endif()
  if(NOT ARG_SCRIPT)
    set(ARG_SCRIPT ${topic}.py)
  endif()

  # The lesson is part of the documentation whether or not this machine can build it.
  cuda_streams_register_chapter(${chapter} ${ARG_SOURCE})

  if(NOT CUDA_STREAMS_TORCH)
    message(STATUS "cuda-streams: chapter ${number} skipped: CUDA_STREAMS_TORCH is OFF")
    return()
  endif()

  _cuda_streams_torch_python(python)
  _cuda_streams_torch_ask_python("${python}" py)

  # Where to look: what the user gave, then what Python says.
  set(prefix_path ${CMAKE_PREFIX_PATH})
  if(DEFINED ENV{CMAKE_PREFIX_PATH})
    string(REPLACE ":" ";" env_prefix_path "$ENV{CMAKE_PREFIX_PATH}")
    list(APPEND prefix_path ${env_prefix_path})
  endif()
  if(NOT Torch_DIR AND DEFINED ENV{Torch_DIR})
    set(Torch_DIR "$ENV{Torch_DIR}")
  endif()
  set(given FALSE)
  if(Torch_DIR OR prefix_path)
    set(given TRUE)
  endif()
  if(py_OK)
    list(APPEND prefix_path "${py_PREFIX}")
  endif()

  set(torch_found FALSE)
  set(why "")
  if(NOT given AND NOT py_OK)
    set(why "libtorch not found: ${py_WHY}, and neither Torch_DIR nor CMAKE_PREFIX_PATH is set")
  else()
    set(key "${python}|${py_PREFIX}|${Torch_DIR}|${prefix_path}|${CMAKE_CXX_COMPILER}|${CMAKE_CUDA_COMPILER}")
    if(DEFINED CUDA_STREAMS_TORCH_TRIAL_KEY AND CUDA_STREAMS_TORCH_TRIAL_KEY STREQUAL key)
      set(trial_OK ${CUDA_STREAMS_TORCH_TRIAL_OK})
      set(trial_DIR "${CUDA_STREAMS_TORCH_TRIAL_DIR}")
      set(trial_WHY "${CUDA_STREAMS_TORCH_TRIAL_WHY}")
    else()
      message(STATUS "cuda-streams: chapter ${number}: looking for libtorch in a trial configure")
      _cuda_streams_torch_trial("${python}" "${prefix_path}" trial)
      set(CUDA_STREAMS_TORCH_TRIAL_KEY "${key}" CACHE INTERNAL "")
      set(CUDA_STREAMS_TORCH_TRIAL_OK ${trial_OK} CACHE INTERNAL "")
      set(CUDA_STREAMS_TORCH_TRIAL_DIR "${trial_DIR}" CACHE INTERNAL "")
      set(CUDA_STREAMS_TORCH_TRIAL_WHY "${trial_WHY}" CACHE INTERNAL "")
    endif()
    if(trial_OK)
      if(NOT Torch_DIR)
        set(Torch_DIR "${trial_DIR}" CACHE PATH "The directory holding TorchConfig.cmake" FORCE)
        # The trial's answer holds for the Torch_DIR it found, too.
        set(CUDA_STREAMS_TORCH_TRIAL_KEY
            "${python}|${py_PREFIX}|${Torch_DIR}|${prefix_path}|${CMAKE_CXX_COMPILER}|${CMAKE_CUDA_COMPILER}"
            CACHE INTERNAL "")
      endif()
      if(python)
        set(Python_EXECUTABLE "${python}")  # TorchConfig's CUDA part looks for a Python
      endif()
      set(CMAKE_PREFIX_PATH ${prefix_path})
      find_package(Torch CONFIG QUIET)
      if(Torch_FOUND AND TARGET torch AND TARGET c10_cuda)
        set(torch_found TRUE)
      else()
        set(why "find_package(Torch) with Torch_DIR=${Torch_DIR} found no usable torch")
      endif()
    else()
      set(why "${trial_WHY}")
    endif()
  endif()

  if(torch_found)
    message(STATUS "cuda-streams: chapter ${number}: libtorch ${Torch_VERSION} from ${Torch_DIR}")
    add_executable(${chapter} ${ARG_SOURCE})
    target_link_libraries(${chapter} PRIVATE cuda_streams::common ${TORCH_LIBRARIES})
    # The C++ standard torch's headers ask for, where it is newer than the project's.
    get_target_property(torch_standard torch CXX_STANDARD)
    if(torch_standard AND torch_standard GREATER 17)
      set_target_properties(${chapter} PROPERTIES CXX_STANDARD ${torch_standard})
    endif()
    cuda_streams_warnings(${chapter})
  else()
    message(STATUS "cuda-streams: chapter ${number} skipped: ${why}")
  endif()

  # The Python script needs no build, only a Python that imports torch.
  set(CUDA_STREAMS_TORCH_PYTHON "")
  if(py_OK)
    set(CUDA_STREAMS_TORCH_PYTHON "${python}")
  elseif(torch_found)
    message(STATUS "cuda-streams: chapter ${number}: ${py_WHY}: ${ARG_SCRIPT} is not tested")
  endif()
  set(CUDA_STREAMS_TORCH_SCRIPT ${CMAKE_CURRENT_SOURCE_DIR}/${ARG_SCRIPT})

  if(CUDA_STREAMS_TESTS)
    if(TARGET ${chapter})
      chapter_test(NAME args.unknown_flag EXE ${chapter} ARGS --no-such-flag EXIT 2
                   MATCH "unknown flag '--no-such-flag'" LABELS args host)
      chapter_test(NAME args.help EXE ${chapter} ARGS --help EXIT 0 MATCH "--device" "--help"
                   LABELS args host)
    endif()
    set(test_file ${PROJECT_SOURCE_DIR}/tests/chapters/${chapter}.cmake)
    if(NOT EXISTS ${test_file})
      message(FATAL_ERROR "chapter ${chapter} has no tests: expected ${test_file}")
    endif()
    set(CHAPTER ${chapter})
    include(${test_file})
    cuda_streams_isolate_tests()
  endif()
endfunction()
