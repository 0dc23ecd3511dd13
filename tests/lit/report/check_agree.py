#!/usr/bin/env python3
"""The report's sections agree (issue 20's "one estimate"): for each FILE.kf and device,
`kfuse report --json` gives every fused kernel of the traffic table the time of the
expected-time section's kernel of the same name, the fused total is their time as one CUDA
graph and the expected total; the text report's table, totals and expected section print the same
times; `kfuse dot --fused` labels the plan with the same total.
Usage: check_agree.py KFUSE DEVICE FILE.kf... ; prints one line per file and graph."""
import json, re, subprocess, sys

kfuse, device, files = sys.argv[1], sys.argv[2], sys.argv[3:]


def run(*args):
    r = subprocess.run([kfuse, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("check_agree: kfuse %s failed: %s" % (" ".join(args), r.stderr))
    return r.stdout


def close(a, b):
    return abs(a - b) <= 1e-5 * max(abs(a), abs(b), 1e-12)


def as_graph(device, alone):
    """Kernels' times alone, run as one CUDA graph (Target::graphSeconds): each after the
    first pays the device's cost per further kernel of a graph, not a kernel's alone."""
    saved = device["kernel_seconds"] - min(device["graph_kernel_seconds"], device["kernel_seconds"])
    return sum(alone) - max(0, len(alone) - 1) * saved


def fail(what):
    sys.exit("check_agree: " + what)


for f in files:
    reports = [json.loads(line) for line in run("report", "--json", "--device", device, f).splitlines()]
    text = run("report", "--device", device, f)
    for r in reports:
        g, fused, exp = r["graph"], r["fused"], r["expected"]
        if "kernels" not in exp:
            fail("%s: no kernels generated: %s" % (g, exp.get("error")))
        byname = {k["name"]: k for k in exp["kernels"]}
        if len(fused["kernels"]) != len(exp["kernels"]):
            fail("%s: %d kernels in the table, %d expected" % (g, len(fused["kernels"]), len(exp["kernels"])))
        for k in fused["kernels"]:
            e = byname.get(k["name"])
            if e is None or not close(k["seconds"], e["seconds"]):
                fail("%s: kernel %s: table %s s, expected %s" % (g, k["name"], k["seconds"], e and e["seconds"]))
            if (k["bound"] == "compute") != e["compute_bound"]:
                fail("%s: kernel %s: table %s-bound, expected says otherwise" % (g, k["name"], k["bound"]))
        total = as_graph(r["device"], [k["seconds"] for k in fused["kernels"]])
        if not (close(fused["seconds"], total) and close(total, exp["seconds"])):
            fail("%s: fused total %s, kernels %s, expected %s" % (g, fused["seconds"], total, exp["seconds"]))
        utotal = as_graph(r["device"], [k["seconds"] for k in r["unfused"]["kernels"]])
        if not close(r["unfused"]["seconds"], utotal):
            fail("%s: unfused total %s, kernels %s" % (g, r["unfused"]["seconds"], utotal))
    # The text: each graph's table rows, fused total and expected lines name one time.
    for block in text.split("traffic report for graph ")[1:]:
        g = block.split("'")[1]
        rows = dict(re.findall(r"^  (\S+) +\d+ .* (?:memory|compute) +(\S+ \S+)$", block, re.M))
        fused_total = re.search(r"^  fused +\d+ launch(?:es)? .*  (\S+ \S+)$", block, re.M).group(1)
        exp = re.search(r"^expected on .*: (\S+ \S+) for \d+ kernels?$", block, re.M).group(1)
        times = dict(re.findall(r"^  (\S+) +(\S+ \S+)  (?:memory|compute)-bound", block, re.M))
        if fused_total != exp or rows != times:
            fail("%s: text table %s, fused %s; expected %s %s" % (g, rows, fused_total, exp, times))
        dot = run("dot", "--fused", "--device", device, "--graph", g, f)
        label = re.search(r"kernels?, .* moved \(.*\), (\S+ \S+)\";", dot).group(1)
        if label != exp:
            fail("%s: dot --fused says %s, the report %s" % (g, label, exp))
        print("check_agree: %s on %s: %d kernel%s, %s" % (g, device, len(rows), "" if len(rows) == 1 else "s", exp))
