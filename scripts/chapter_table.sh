#!/usr/bin/env bash
# Prints the README's chapter table from the folders chapters/NN_topic (their lesson titles),
# or, with --check README.md, fails when the README's table differs from the folders,
# or, with --write README.md, rewrites the table in place.
#
# The table sits between the lines <!-- chapters:begin --> and <!-- chapters:end -->.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

table() {
  echo "| # | Chapter | What it proves |"
  echo "|---|---------|----------------|"
  for dir in "$root"/chapters/[0-9][0-9]_*/; do
    [ -d "$dir" ] || continue
    local name number title proves
    name=$(basename "$dir")
    number=${name%%_*}
    # The lesson's title is its first heading, "# NN: Title {#anchor}".
    title=$(sed -n '1s/^# [0-9]*: *//; 1s/ *{#.*}$//; 1p' "$dir/README.md" 2>/dev/null || true)
    # The line after "Proves:" in the lesson says in one sentence what the program checks.
    # It may wrap: the paragraph runs to the next blank line.
    proves=$(awk '/^\*\*Proves:\*\*/ { on = 1; sub(/^\*\*Proves:\*\* */, "") }
                  on && /^$/ { exit }
                  on { printf "%s%s", (n++ ? " " : ""), $0 }' "$dir/README.md" 2>/dev/null || true)
    echo "| $number | [$title](chapters/$name/README.md) (\`$name\`) | ${proves:-} |"
  done
}

case "${1:-}" in
  "") table ;;
  --check|--write)
    readme=${2:?"usage: $0 [--check|--write] README.md"}
    current=$(sed -n '/<!-- chapters:begin -->/,/<!-- chapters:end -->/p' "$readme" | sed '1d;$d')
    wanted=$(table)
    if [ "$1" = "--check" ]; then
      if [ "$current" != "$wanted" ]; then
        echo "README.md's chapter table is out of date; run: scripts/chapter_table.sh --write README.md"
        diff <(echo "$wanted") <(echo "$current") || true
        exit 1
      fi
      echo "README.md lists every chapter folder."
    else
      tmp=$(mktemp)
      awk -v table="$wanted" '
        /<!-- chapters:begin -->/ { print; print table; skipping = 1; next }
        /<!-- chapters:end -->/ { skipping = 0 }
        !skipping { print }' "$readme" >"$tmp"
      mv "$tmp" "$readme"
    fi
    ;;
  *) echo "usage: $0 [--check|--write] README.md" >&2; exit 2 ;;
esac
