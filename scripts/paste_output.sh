#!/usr/bin/env bash
# Replaces the code block under a lesson's "## Output on an NVIDIA H200" heading (or the heading
# named by HEADING) with the contents of a file: how the lessons get the real output of a run.
#
#   scripts/paste_output.sh chapters/NN_topic/README.md OUTPUT.txt [HEADING]
set -euo pipefail
readme=${1:?"usage: $0 README.md OUTPUT.txt [HEADING]"}
output=${2:?"usage: $0 README.md OUTPUT.txt [HEADING]"}
heading=${3:-"## Output on an NVIDIA H200"}
grep -qxF "$heading" "$readme" || { echo "$readme has no line '$heading'" >&2; exit 1; }
tmp=$(mktemp)
# Lines that name files of the run that produced the output are dropped.
grep -v -E '^(Trace|SVG) written to ' "$output" >"$tmp.body" || true
awk -v heading="$heading" -v body="$tmp.body" '
  $0 == heading { print; in_section = 1; next }
  in_section == 1 && /^```/ { print; while ((getline line < body) > 0) print line; in_section = 2; next }
  in_section == 2 { if (/^```/) { print; in_section = 0 } ; next }
  { print }' "$readme" >"$tmp"
mv "$tmp" "$readme"
rm -f "$tmp.body"
