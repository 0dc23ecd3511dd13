#!/usr/bin/env python3
"""Run after each link of kfuse_tests (tests/CMakeLists.txt): lists its test cases and writes
OUT, a file ctest includes, with one add_test per test case, `unit/NAME`, so that `ctest -j`
runs them in parallel. Catch.cmake's catch_discover_tests (and a CMake script) split names
that hold '[', ',' or ';' wrongly: CMake lists treat '[' and ';' specially, and one test
joined 90 names and ran none of them. Here every name reaches the binary with Catch's special
characters escaped by '\\' (`\\[-1, 1)`), inside CMake bracket arguments, which keep every
character as it is.
Usage: add_unit_tests.py EXE OUT"""
import subprocess, sys

exe, out = sys.argv[1], sys.argv[2]
r = subprocess.run([exe, "--list-test-names-only"], capture_output=True, text=True)
names = [n.strip() for n in r.stdout.splitlines() if n.strip()]
if r.returncode < 0 or not names:
    sys.exit("add_unit_tests: '%s --list-test-names-only' failed (%d): %s"
             % (exe, r.returncode, r.stderr))
lines = ["# Written by tests/unit/add_unit_tests.py; do not edit."]
for name in names:
    spec = "".join("\\" + c if c in '\\,[]"~*' else c for c in name)
    title = name.replace(";", ",")  # ctest lists its names with ';'
    if "]==]" in name or "]==]" in spec:
        sys.exit("add_unit_tests: a test name holds ']==]': %s" % name)
    # -w NoTests: a name that matched nothing fails instead of passing with no test run.
    lines.append("add_test([==[unit/%s]==] [==[%s]==] -w NoTests [==[%s]==])" % (title, exe, spec))
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
print("add_unit_tests: %d test cases" % len(names))
