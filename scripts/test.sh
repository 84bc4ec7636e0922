#!/usr/bin/env bash
# Configures, builds and runs the whole test suite through a CMake preset.
#
#   scripts/test.sh [extra cmake configure arguments...]
#
# The preset is "default" (the GPU in hand), or "ci" (warnings are errors) when CI=true, or
# whatever CUDA_STREAMS_PRESET names. Extra arguments go to the configure step, e.g.
# scripts/test.sh -DCMAKE_CUDA_ARCHITECTURES=90. Without a GPU, the chapter tests report
# "skipped" and the host, argument and documentation tests still run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset=${CUDA_STREAMS_PRESET:-default}
if [ -z "${CUDA_STREAMS_PRESET:-}" ] && [ "${CI:-}" = "true" ]; then
  preset=ci
fi
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja >/dev/null 2>&1; then
  export CMAKE_GENERATOR=Ninja
fi
# The exercises build in their own tree (the exercises preset); an older build/ may still have
# the option cached, which would add the students' failing tests to this suite.
cmake --preset "$preset" -DCUDA_STREAMS_EXERCISES=OFF "$@"
cmake --build --preset "$preset" --parallel "$(nproc)"  # one job per core, with make too
ctest --preset "$preset"
