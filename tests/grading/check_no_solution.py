#!/usr/bin/env python3
"""Checks that a student handout holds no solution of an exercise.

  check_no_solution.py INSTRUCTOR_TREE HANDOUT_TREE [BUILD_DIR...]

Build trees in HANDOUT_TREE (build/, build-*/) are checked as BUILD_DIRs too.

INSTRUCTOR_TREE has solutions/NN_topic.cmake, each exercise_solution(REPLACE old new ...).
Fails (exit 1), naming the file, where
  - the handout has a solutions/ folder, a file named *_solved.* or a file holding the marker that
    opens every solution file (in the handout or in a BUILD_DIR of it);
  - a handout's chapters/NN_topic/exercise.* differs from the instructor's, as given;
  - a rule's new text appears in a handout file outside chapters/ (tests, docs, scripts, cmake,
    the README...), other than where its old text accounts for it (new inside old, e.g.
    `s < stream_count` in `s < stream_count - 1`); or, where no file of the instructor's chapters/
    holds it (a chapter's program, lesson or exercise may show the same code for its own use), in
    any file of the handout or of a BUILD_DIR (whose documentation pages show the chapters).
Exits 0 otherwise, saying how many rules and files it checked.
"""

import os
import re
import sys

MARKER = "CUDA_STREAMS_" + "SOLUTION_FILE"
RULE = re.compile(r"REPLACE\s+\[(=*)\[(.*?)\]\1\]\s+\[(=*)\[(.*?)\]\3\]", re.S)


def text_files(root, skip=()):
    """(path, text or None for a binary file, name) of every file under root but in `skip`."""
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs
                   if d != ".git" and os.path.realpath(os.path.join(folder, d)) not in skip]
        for name in names:
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as handle:
                data = handle.read()
            text = None if b"\0" in data[:8192] else data.decode("utf-8", "replace")
            yield path, text, name


def rules_of(instructor):
    """(chapter, old, new) of every REPLACE rule in the instructor's solutions/."""
    folder = os.path.join(instructor, "solutions")
    rules = []
    for name in sorted(os.listdir(folder)):
        if not re.match(r"^[0-9][0-9]_.*\.cmake$", name):
            continue
        found = RULE.findall(open(os.path.join(folder, name), encoding="utf-8").read())
        if not found:
            sys.exit(f"check_no_solution.py: no REPLACE rule found in solutions/{name}")
        rules += [(name[:-6], m[1], m[3]) for m in found]
    if not rules:
        sys.exit(f"check_no_solution.py: no solution file in {folder}")
    return rules


def is_exercise(relative):
    """chapters/NN_topic/exercise.*, relative to a tree's root."""
    return re.match(r"^chapters/[0-9][0-9]_[^/]+/exercise\.[a-z]+$", relative) is not None


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    instructor, handout, builds = sys.argv[1], sys.argv[2], sys.argv[3:]
    # Build trees inside the handout (build/, build-*/) are checked as build trees.
    builds += [os.path.join(handout, d) for d in sorted(os.listdir(handout))
               if re.match(r"^build(-.*)?$", d) and os.path.isdir(os.path.join(handout, d))]
    skip = {os.path.realpath(b) for b in builds}
    builds = sorted(skip)
    rules = rules_of(instructor)
    taught = set()  # new texts that a file of the instructor's chapters/ holds
    for _, text, _ in text_files(os.path.join(instructor, "chapters")):
        if text is not None:
            taught.update(new for _, _, new in rules if new in text)
    problems = []
    if os.path.isdir(os.path.join(handout, "solutions")):
        problems.append("solutions/: the folder is in the handout")
    checked = 0
    for tree, is_build in [(handout, False)] + [(b, True) for b in builds]:
        for path, text, name in text_files(tree, skip if not is_build else ()):
            checked += 1
            relative = os.path.relpath(path, tree).replace(os.sep, "/")
            where = os.path.basename(os.path.normpath(tree)) + "/" + relative
            if "_solved." in name or name.startswith("exercise_solved"):
                problems.append(f"{where}: a solved build's file")
            if text is None:
                continue
            if MARKER in text:
                problems.append(f"{where}: holds the marker of a solution file")
            if not is_build and is_exercise(relative):
                given = os.path.join(instructor, relative)
                if not os.path.exists(given) or open(given, encoding="utf-8").read() != text:
                    problems.append(f"{where}: differs from the exercise as given")
            in_chapters = relative.startswith("chapters/") and not is_build
            for chapter, old, new in rules:
                if new in taught and (is_build or in_chapters):
                    continue
                if text.count(new) > old.count(new) * text.count(old):
                    problems.append(f"{where}: holds the solution text of {chapter}: {new!r}")
    for problem in problems:
        print(f"FAIL: {problem}")
    if problems:
        return 1
    print(f"No solution text: {len(rules)} rules of {len({r[0] for r in rules})} exercises, "
          f"{checked} files checked ({len(taught)} of the fixes' texts also appear in chapters/, "
          f"so they were looked for outside it only).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
