#!/usr/bin/env bash
# A made-up chapter whose program reads 520 code lines: `program_shape.py --reading-path --check`
# must fail on it (the test repo.reading_path_too_long requires exit 1 and the message).
#
#   reading_path_too_long.sh SOURCE_DIR WORK_DIR PYTHON
set -eu
source_dir=$1 work=$(mktemp -d "$2/reading_path_case.XXXXXX") python=$3
trap 'rm -rf "$work"' EXIT  # a folder of its own: two test runs at once do not share it
mkdir -p "$work/chapters/99_long"
cd "$work"
for i in $(seq 1 520); do echo "int value_$i = 0;"; done >chapters/99_long/long.cu
"$python" "$source_dir/scripts/program_shape.py" --reading-path --check chapters/99_long/long.cu
