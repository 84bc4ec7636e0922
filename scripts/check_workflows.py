#!/usr/bin/env python3
"""Checks the GitHub Actions workflows in .github/workflows/ before a runner sees them.

    scripts/check_workflows.py [WORKFLOW.yml...]     (default: every .github/workflows/*.yml)

Each file must parse as YAML and have a name, triggers (`on`) and jobs; each job a `runs-on`
and steps, each step exactly one of `run` and `uses`; every `${{` closed. Every CMake preset a
`cmake --preset`, `cmake --build --preset` or `ctest --preset` line names must exist in
CMakePresets.json, and every repository script a step runs (scripts/..., .ci/...) must exist.
Exits 0 when all hold, 1 naming each problem, 77 when PyYAML is missing.
"""
import glob
import json
import os
import re
import sys

try:
    import yaml
except ImportError:
    print("SKIP: PyYAML is not installed (python3 -m pip install pyyaml, or apt python3-yaml)")
    sys.exit(77)

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
presets = json.load(open(os.path.join(root, "CMakePresets.json")))
known = {kind: {p["name"] for p in presets.get(kind + "Presets", [])}
         for kind in ("configure", "build", "test")}
PRESET = re.compile(r"\b(cmake --build|cmake|ctest)\b[^\n|;&]*?--preset[ =](\S+)")
SCRIPT = re.compile(r"(?:^|[\s/])((?:scripts|\.ci)/[\w./-]+)")

problems = []
files = sys.argv[1:] or sorted(glob.glob(os.path.join(root, ".github/workflows/*.yml")))
for path in files:
    name = os.path.relpath(path, root)
    text = open(path).read()
    for number, line in enumerate(text.splitlines(), 1):
        if any("}}" not in rest for rest in line.split("${{")[1:]):
            problems.append(f"{name}:{number}: an expression ${{{{ is not closed on its line")
    try:
        workflow = yaml.safe_load(text)
    except yaml.YAMLError as error:
        problems.append(f"{name}: not YAML: {error}")
        continue
    # YAML 1.1 reads the key `on` as true.
    for key, present in (("name", "name" in workflow), ("on", "on" in workflow or True in workflow),
                         ("jobs", "jobs" in workflow)):
        if not present:
            problems.append(f"{name}: no '{key}'")
    for job_name, job in (workflow.get("jobs") or {}).items():
        if "runs-on" not in job:
            problems.append(f"{name}: job {job_name} has no runs-on")
        for i, step in enumerate(job.get("steps") or []):
            label = step.get("name", f"step {i + 1}")
            if ("run" in step) == ("uses" in step):
                problems.append(f"{name}: job {job_name}, {label}: needs exactly one of run and uses")
            command = step.get("run", "")
            for tool, preset in PRESET.findall(command):
                kind = {"cmake --build": "build", "cmake": "configure", "ctest": "test"}[tool]
                if preset not in known[kind]:
                    problems.append(f"{name}: job {job_name}, {label}: no {kind} preset '{preset}'")
            for script in SCRIPT.findall(command):
                local = script.split("/", 1)[0] in ("scripts", ".ci")
                if local and not os.path.exists(os.path.join(root, script)):
                    problems.append(f"{name}: job {job_name}, {label}: {script} does not exist")
    print(f"{name}: {len(workflow.get('jobs') or {})} jobs checked")
for problem in problems:
    print("FAIL:", problem)
sys.exit(1 if problems else 0)
