#!/usr/bin/env bash
# A chapter whose MIN_TOOLKIT is newer than the CUDA Toolkit is left out of the build, and the
# configure step says which chapter and why: a made-up chapter 13_demo asking for 12.3 in a
# project that reports toolkit 12.2 (and, as a control, one asking for 12.2, which is added:
# its executable's target exists).
#
#   min_toolkit_skip.sh SOURCE_DIR WORK_DIR [CMAKE]   (CMAKE: the cmake to run, default: cmake)
set -u
source_dir=$1 work=$(mktemp -d "$2/min_toolkit_skip.XXXXXX") cmake=${3:-cmake}
trap 'rm -rf "$work"' EXIT  # a folder of its own: two test runs at once do not share it
mkdir -p "$work/13_demo" "$work/14_demo"
cat >"$work/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(min_toolkit_skip LANGUAGES NONE)
set(CUDAToolkit_VERSION 12.2)  # what find_package(CUDAToolkit) would report
set(CUDA_STREAMS_TESTS OFF)
include("$source_dir/cmake/CudaStreamsChapter.cmake")
# What the real project defines before its chapters, as stand-ins: the helper library and the
# warning flags (the control chapter links and calls them once it is past the check).
add_library(cuda_streams_common_stub INTERFACE)
add_library(cuda_streams::common ALIAS cuda_streams_common_stub)
function(cuda_streams_warnings target)
endfunction()
add_subdirectory(13_demo)
add_subdirectory(14_demo)
foreach(target 13_demo 14_demo)
  if(TARGET \${target})
    message(STATUS "target \${target} exists")
  endif()
endforeach()
CMAKE
echo 'cuda_streams_chapter(MIN_TOOLKIT 12.3)' >"$work/13_demo/CMakeLists.txt"
# The control is built from a plain C++ file (the project has no CUDA): what it shows is that the
# check lets a chapter through where the toolkit is new enough.
printf 'enable_language(CXX)\ncuda_streams_chapter(SOURCE demo.cpp MIN_TOOLKIT 12.2)\n' \
  >"$work/14_demo/CMakeLists.txt"
echo 'int main() { return 0; }' >"$work/14_demo/demo.cpp"
"$cmake" -S "$work" -B "$work/build" >"$work/configure.log" 2>&1
status=$?
failures=0
want_skip="chapter 13_demo skipped: it needs CUDA Toolkit 12.3 or newer to compile; this one is 12.2"
grep -qF "$want_skip" "$work/configure.log" || { echo "FAIL: no line '$want_skip'"; failures=1; }
grep -qF "target 13_demo exists" "$work/configure.log" && { echo "FAIL: 13_demo was added"; failures=1; }
grep -qF "chapter 14_demo skipped" "$work/configure.log" && { echo "FAIL: 14_demo was skipped"; failures=1; }
grep -qF "target 14_demo exists" "$work/configure.log" || { echo "FAIL: 14_demo was not added"; failures=1; }
[ "$status" = 0 ] || { echo "FAIL: the configure step failed"; failures=1; }
if [ "$failures" != 0 ]; then
  echo "configure exit $status; its log:"; cat "$work/configure.log"; exit 1
fi
echo "ok: 13_demo left out with its reason; 14_demo (12.2) added"
