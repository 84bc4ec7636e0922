#!/usr/bin/env bash
# Every tracked C++ and CUDA source (.cpp, .hpp, .cu, .cuh) is formatted as the repository's
# .clang-format says.
#
#   scripts/check_format.sh [clang-format executable]
#
# Exits 0 when all are, 1 when one is not (clang-format names the places), and 77 (skipped)
# where clang-format is not installed. Fix with: clang-format -i FILE...
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tool=${1:-${CLANG_FORMAT:-}}
if [ -z "$tool" ]; then
  tool=$(command -v clang-format-14 || command -v clang-format || true)
fi
if [ -z "$tool" ] || ! command -v "$tool" >/dev/null 2>&1; then
  echo "SKIP: clang-format is not installed"
  exit 77
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.cu' '*.cuh')
else
  mapfile -t files < <(find common tests chapters -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' | sort)
fi
echo "$("$tool" --version | head -n 1): checking ${#files[@]} files"
failed=()
for file in "${files[@]}"; do
  [ -f "$file" ] || continue
  if ! "$tool" --dry-run --Werror "$file" 2>/tmp/check_format.$$; then
    head -n 20 /tmp/check_format.$$
    failed+=("$file")
  fi
done
rm -f /tmp/check_format.$$
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAIL: ${#failed[@]} files are not formatted (fix with: clang-format -i FILE):"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "All ${#files[@]} files are formatted."
