"""The real-models benchmark's driver (issue 17): kfuse against cuBLAS and PyTorch.

Run from the repo root on the GPU machine:

    python3 bench/models/run.py --json /tmp/models.json              # the default run
    python3 bench/models/run.py --T 16,1024 --models llama3_8b,gpt2_xl --budget-s 330
    python3 bench/models/run.py --from-json a.json b.json              # tables of earlier runs

For each case of models.py it writes the .kf file into a temp folder, runs
`build/bin/kfuse run FILE.kf --bench --reps 50` (with --check where the CPU reference is
cheap: T*K*N <= --check-limit), parses kfuse's timing table, then times the PyTorch peers
of the same case in this process (peers.py), and prints one Markdown table per section.
Defaults: linear layers with the cuBLAS peer, blocks with eager and torch.compile;
max-autotune only with --autotune. README.md says what each column means.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models as M  # noqa: E402

# --- kfuse's `run --bench` output ----------------------------------------------------------
# runtime/Benchmark.cpp formatTiming: one row per kernel, then "program (stream launches)",
# "program (one CUDA graph)" and "device copy (roof)", columns time, bytes, GB/s, % of copy
# and (not for the copy) the predicted time; times and bytes as formatSeconds/formatBytes
# write them (ir/Units.cpp: "{:.3g} ns|us|ms|s", "{:.3g} B|KB|MB|GB|TB|PB", decimal units).
NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
T_UNIT = r"(?:ns|us|µs|ms|s)"
B_UNIT = r"(?:[KMGTP]i?)?B"
US = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}
ROW = re.compile(rf"^(?P<name>\S.*?)\s+(?P<t>{NUM})\s*(?P<tu>{T_UNIT})\s+(?P<b>{NUM})\s*"
                 rf"(?P<bu>{B_UNIT})\s+(?P<gbs>{NUM})\s+(?P<pct>{NUM})%"
                 rf"(?:\s+(?P<p>{NUM})\s*(?P<pu>{T_UNIT}))?\s*$")
FUSED = re.compile(rf"fused\s+(?P<f>{NUM})\s*(?P<fu>{T_UNIT})\s+vs\s+unfused\s+(?P<u>{NUM})\s*"
                   rf"(?P<uu>{T_UNIT})\s+\((?P<n>\d+)\s+kernels?\):\s+(?P<m>{NUM})x faster "
                   rf"measured,\s+(?P<p>{NUM})x predicted")
LOADED = re.compile(rf"^(?P<g>\S+): (?P<n>\d+) kernels? \((?P<plan>[^)]*)\), compiled and "
                    rf"loaded in (?P<ms>{NUM}) ms \((?P<src>[^)]*)\)")
MEAS_PRED = re.compile(rf"^measured / predicted:\s+(?P<r>{NUM})")


def to_us(v: str, unit: str) -> float:
    return float(v) * US[unit]


def to_bytes(v: str, unit: str) -> float:
    scale = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}[unit[0] if unit != "B" else ""]
    if "i" in unit:
        scale = 1024 ** ("KMGTP".index(unit[0]) + 1)
    return float(v) * scale


def parse_kfuse(out: str) -> dict:
    """The numbers of one `kfuse run --bench` stdout."""
    r: dict = {"kernels": []}
    for line in out.splitlines():
        s = line.rstrip()
        if m := LOADED.match(s):
            r.update(n_kernels=int(m["n"]), plan=m["plan"], compile_load_ms=float(m["ms"]),
                     cubins_from=m["src"])
        elif m := ROW.match(s):
            row = {"us": to_us(m["t"], m["tu"]), "bytes": to_bytes(m["b"], m["bu"]),
                   "gbps": float(m["gbs"]), "of_copy_pct": float(m["pct"])}
            if m["p"]:
                row["predicted_us"] = to_us(m["p"], m["pu"])
            name = m["name"].strip()
            if name == "program (stream launches)":
                r["stream"] = row
            elif name == "program (one CUDA graph)":
                r["graph"] = row
            elif name == "device copy (roof)":
                r["copy"] = row
            else:
                r["kernels"].append(dict(name=name, **row))
        elif m := MEAS_PRED.match(s):
            r["measured_over_predicted"] = float(m["r"])
        elif m := FUSED.search(s):
            r.update(unfused_us=to_us(m["u"], m["uu"]), unfused_kernels=int(m["n"]),
                     speedup_measured=float(m["m"]), speedup_predicted=float(m["p"]))
        elif s.startswith("check: all"):
            r["check"] = "ok"
    prog = r.get("graph") or r.get("stream")
    if prog:
        r["us"] = prog["us"]
        r["predicted_us"] = prog.get("predicted_us")
        r["timed_as"] = "one CUDA graph" if "graph" in r else "stream launches"
    if "copy" in r:
        r["copy_gbps"] = r["copy"]["gbps"]
    return r


def first_error(stderr: str, stdout: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln[:300]
    if lines:
        return lines[0][:300]
    out = [ln.strip() for ln in stdout.splitlines() if ln.strip()]
    return (out[-1] if out else "no output")[:300]


def run_kfuse(kfuse: str, kf: str, reps: int, check: bool, timeout: float, extra: list[str]) -> dict:
    """`kfuse run KF --bench --reps N [--check]`; a check failure is rerun without --check
    (kfuse stops before timing when the check fails). Never raises for kfuse's failures."""
    def once(with_check: bool):
        cmd = [kfuse, "run", kf, "--bench", "--reps", str(reps), *extra] + (["--check"] if with_check else [])
        t0 = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"timeout: kfuse run took more than {timeout:.0f} s", time.time() - t0
        return p, None, time.time() - t0

    p, err, wall = once(check)
    res: dict = {}
    if p is not None and p.returncode != 0 and check and "check failed" in (p.stderr + p.stdout):
        res["check"] = "FAIL: " + first_error(p.stderr, p.stdout)
        p, err, wall2 = once(False)
        wall += wall2
    if p is None:
        return {"ok": False, "error": err, "wall_s": round(wall, 2), **res}
    if p.returncode != 0:
        return {"ok": False, "rc": p.returncode, "error": first_error(p.stderr, p.stdout),
                "wall_s": round(wall, 2), **res}
    parsed = parse_kfuse(p.stdout)
    parsed.update(res)
    parsed.setdefault("check", "ok" if check and "check" not in res else "not run")
    if "us" not in parsed:
        return {"ok": False, "error": "no timing in kfuse's output: " + first_error("", p.stdout),
                "wall_s": round(wall, 2), **parsed}
    return {"ok": True, "wall_s": round(wall, 2), **parsed}


# --- tables --------------------------------------------------------------------------------

def fnum(x, nd=1) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    if x >= 1000:
        return f"{x:.0f}"
    return f"{x:.{nd}f}" if x >= 10 else f"{x:.{nd + 1}f}"


def geomean(xs) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def peer_us(rec: dict, p: str):
    r = rec.get("peers", {}).get(p)
    return r.get("us") if r else None


def peer_cell(rec: dict, p: str) -> str:
    r = rec.get("peers", {}).get(p)
    if not r:
        return "-"
    if "error" in r:
        return "ERROR"
    return fnum(r["us"]) + ("" if r.get("ok") else " MISMATCH")


def kf_cell(rec: dict) -> str:
    k = rec.get("kfuse")
    if not k:
        return "-"
    if not k.get("ok"):
        return "FAIL: " + k.get("error", "?").replace("|", "/")[:120]
    return fnum(k["us"])


def check_cell(rec: dict) -> str:
    c = (rec.get("kfuse") or {}).get("check", "-")
    return "ok" if c == "ok" else "FAIL" if c.startswith("FAIL") else \
        "skip" if c.startswith("skip") else "-"


def roof_pct(weight_bytes: int, us, gbps) -> float | None:
    if not us or not gbps:
        return None
    return 100.0 * weight_bytes / (us * 1e-6) / (gbps * 1e9)


def linear_table(recs: list[dict]) -> list[str]:
    extra = [p for p in ("eager", "compile", "autotune") if any(p in r.get("peers", {}) for r in recs)]
    head = ["model", "layer", "variant", "T", "kfuse us", "cuBLAS us", "cuBLAS/kfuse",
            "kfuse TFLOP/s", *[f"{p} us" for p in extra], "check", "also"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ratios: dict[int, list[float]] = {}
    for r in recs:
        c, k = r["case"], r.get("kfuse") or {}
        ku, cu = (k.get("us") if k.get("ok") else None), peer_us(r, "cublas")
        ratio = cu / ku if ku and cu else None
        if ratio:
            ratios.setdefault(c["T"], []).append(ratio)
        tf = c["flops"] / (ku * 1e-6) / 1e12 if ku else None
        lines.append("| " + " | ".join([c["model"], c["layer"], c["variant"], str(c["T"]),
                                        kf_cell(r), peer_cell(r, "cublas"),
                                        f"{ratio:.2f}" if ratio else "-", fnum(tf),
                                        *[peer_cell(r, p) for p in extra], check_cell(r),
                                        ", ".join(c.get("also", []))]) + " |")
    allr = [x for v in ratios.values() for x in v]
    g = geomean(allr)
    lines.append("")
    lines.append(f"Geometric mean of cuBLAS/kfuse over {len(allr)} cases: "
                 f"**{g:.3f}**" + (" (>1: kfuse faster)" if g else "") if g else
                 "Geometric mean of cuBLAS/kfuse: no case with both times")
    if len(ratios) > 1:
        lines.append("By T: " + ", ".join(f"T={t}: {geomean(v):.3f} ({len(v)})"
                                          for t, v in sorted(ratios.items())))
    return lines


def block_table(recs: list[dict]) -> list[str]:
    peers = [p for p in ("eager", "compile", "autotune") if any(p in r.get("peers", {}) for r in recs)]
    names = {"eager": "eager us", "compile": "compile us", "autotune": "max-autotune us"}
    head = ["model", "block", "T", "kfuse us", *[names[p] for p in peers], "best peer",
            "best/kfuse", "kfuse % roof", "peer % roof", "unfused us", "fused/unfused meas.",
            "pred.", "check"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ratios = []
    for r in recs:
        c, k = r["case"], r.get("kfuse") or {}
        ku = k.get("us") if k.get("ok") else None
        ok_peers = {p: v["us"] for p, v in r.get("peers", {}).items()
                    if p in peers and "us" in v and v.get("ok")}
        best = min(ok_peers, key=ok_peers.get) if ok_peers else None
        ratio = ok_peers[best] / ku if best and ku else None
        if ratio:
            ratios.append(ratio)
        gbps = k.get("copy_gbps")
        lines.append("| " + " | ".join([
            c["model"], c["variant"], str(c["T"]), kf_cell(r), *[peer_cell(r, p) for p in peers],
            best or "-", f"{ratio:.2f}" if ratio else "-",
            fnum(roof_pct(c["weight_bytes"], ku, gbps)),
            fnum(roof_pct(c["weight_bytes"], ok_peers.get(best), gbps)),
            fnum(k.get("unfused_us")),
            f"{k['speedup_measured']:.2f}x" if "speedup_measured" in k else "-",
            f"{k['speedup_predicted']:.2f}x" if "speedup_predicted" in k else "-",
            check_cell(r)]) + " |")
    g = geomean(ratios)
    lines.append("")
    lines.append(f"Geometric mean of best peer/kfuse over {len(ratios)} cases: **{g:.3f}**"
                 if g else "Geometric mean of best peer/kfuse: no case with both times")
    copies = [(r["kfuse"]["copy_gbps"], r["kfuse"]["copy"]["bytes"]) for r in recs
              if (r.get("kfuse") or {}).get("copy_gbps")]
    if copies:
        lo, hi = min(copies), max(copies)
        lines.append(f"% roof uses each case's own `device copy (roof)` (a copy of half its largest "
                     f"kernel's bytes): {lo[0]:.0f} GB/s ({lo[1] / 1e6:.3g} MB) to {hi[0]:.0f} GB/s "
                     f"({hi[1] / 1e6:.3g} MB) here. A small copy does not reach HBM speed, and a "
                     f"read-only weight stream can beat a copy's read+write rate, so % roof can "
                     f"exceed 100.")
    return lines


def report(records: list[dict], skipped: list[str], meta: dict) -> str:
    out = []
    if meta:
        out.append(f"# kfuse on real models' layers ({meta.get('gpu') or 'GPU ?'}, torch "
                   f"{meta.get('torch', '?')}, {meta.get('kfuse_version', 'kfuse ?')}, "
                   f"{meta.get('date', '')}; kfuse's predictions for its "
                   f"{meta.get('predicted_for', 'h200')} model)")
    lin = [r for r in records if r["case"]["section"] == "linear"]
    blk = [r for r in records if r["case"]["section"] == "block"]
    if lin:
        out += ["", "## Linear layers (times in us; cuBLAS/kfuse > 1 means kfuse is faster)", "",
                *linear_table(lin)]
    if blk:
        out += ["", "## Feed-forward blocks (times in us; best/kfuse > 1 means kfuse is faster; "
                "% roof: weight bytes / time / kfuse's measured copy bandwidth)", "",
                *block_table(blk)]
    problems = []
    for r in records:
        k = r.get("kfuse") or {}
        if k and not k.get("ok"):
            problems.append(f"- kfuse failed on {r['case']['id']}: {k.get('error')}")
        if str(k.get("check", "")).startswith("FAIL"):
            problems.append(f"- kfuse --check failed on {r['case']['id']}: {k['check']}")
        for p, v in r.get("peers", {}).items():
            if "error" in v:
                problems.append(f"- {p} failed on {r['case']['id']}: {v['error']}")
            elif not v.get("ok"):
                problems.append(f"- {p} does not match eager on {r['case']['id']}: {v.get('check')}")
    if problems:
        out += ["", "## Failures and mismatches", "", *problems]
    if skipped:
        out += ["", f"## Skipped ({len(skipped)} cases, budget spent or interrupted)", "",
                ", ".join(skipped)]
    return "\n".join(out) + "\n"


# --- the run -------------------------------------------------------------------------------

def write_json(path: str | None, meta: dict, records: list[dict], skipped: list[str]) -> None:
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"meta": meta, "records": records, "skipped": skipped}, f, indent=1)
    os.replace(tmp, path)


def from_json(paths: list[str]) -> int:
    by_id, skipped, meta = {}, [], {}
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        meta = meta or d.get("meta", {})
        for r in d.get("records", []):
            by_id[r["case"]["id"]] = r
        skipped += d.get("skipped", [])
    skipped = [s for s in dict.fromkeys(skipped) if s not in by_id]
    order = {c.id: i for i, c in enumerate(M.cases(tokens=sorted(
        set(M.TOKENS) | {r["case"]["T"] for r in by_id.values()})))}
    recs = sorted(by_id.values(), key=lambda r: order.get(r["case"]["id"], len(order)))
    print(report(recs, skipped, meta), end="")
    return 0


class Interrupted(Exception):
    pass


def gpu_model() -> str:
    """kfuse's device model of this machine's first GPU: "h100", "h200" or "" (unknown)."""
    try:
        name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    first = name.strip().splitlines()[0] if name.strip() else ""
    return "h200" if "H200" in first else "h100" if "H100" in first else ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="kfuse vs cuBLAS / PyTorch on real models' layers")
    M.add_selection_args(ap)
    env = os.environ.get
    ap.add_argument("--kfuse", default=env("KFUSE", "build/bin/kfuse"), help="the kfuse binary")
    ap.add_argument("--peers", default=env("KFB_PEERS", ""),
                    help="peers for both sections (overrides the two below)")
    ap.add_argument("--linear-peers", default="cublas", help="default: cublas")
    ap.add_argument("--block-peers", default="eager,compile", help="default: eager,compile")
    ap.add_argument("--autotune", action="store_true",
                    help="add torch.compile max-autotune-no-cudagraphs to the block peers (slow)")
    ap.add_argument("--no-peers", action="store_true", help="kfuse only (no torch needed)")
    ap.add_argument("--no-kfuse", action="store_true", help="peers only")
    ap.add_argument("--reps", type=int, default=50, help="timed repetitions, kfuse and peers")
    ap.add_argument("--check-limit", type=float, default=2e9,
                    help="kfuse --check only where T*K*N (summed over GEMMs) <= this; 0: never")
    ap.add_argument("--kfuse-timeout", type=float, default=600, help="seconds per kfuse run")
    ap.add_argument("--kfuse-args", default="", help="extra kfuse run arguments, e.g. --autotune")
    ap.add_argument("--device", default="",
                    help="kfuse's device model for the predictions (default: h100 or h200 by the "
                         "GPU's name, else kfuse's default)")
    ap.add_argument("--budget-s", type=float, default=float(env("KFB_BUDGET_S", 0)),
                    help="start no new case after this many seconds of wall time (0: none)")
    ap.add_argument("--json", help="write every raw number here (rewritten after each case)")
    ap.add_argument("--md", help="also write the tables to this Markdown file")
    ap.add_argument("--kf-dir", help="write the .kf files here and keep them (default: a temp dir)")
    ap.add_argument("--seed", type=int, default=0, help="the peers' input seed")
    ap.add_argument("--from-json", nargs="+", metavar="JSON",
                    help="print the tables of earlier runs (merged by case) and exit")
    a = ap.parse_args(argv)
    if a.from_json:
        return from_json(a.from_json)

    cs = M.selected_cases(a)
    if not cs:
        raise SystemExit("no case selected")
    kfuse = a.kfuse
    if not a.no_kfuse and not (os.path.isfile(kfuse) and os.access(kfuse, os.X_OK)):
        raise SystemExit(f"kfuse binary '{kfuse}' not found (build it, or pass --kfuse)")
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "argv": sys.argv[1:], "reps": a.reps,
            "check_limit": a.check_limit}
    if not a.no_kfuse:
        v = subprocess.run([kfuse, "--version"], capture_output=True, text=True)
        meta["kfuse_version"] = v.stdout.strip() or "kfuse ?"
    try:
        meta["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                        text=True).stdout.strip()
    except OSError:
        pass
    P = None
    if not a.no_peers:
        import peers as P  # noqa: N811 (imports torch)
        meta.update(P.env_info())
        lin_peers = P.parse_peers(a.peers or a.linear_peers, P.LINEAR_DEFAULT)
        blk_peers = P.parse_peers(a.peers or a.block_peers, P.BLOCK_DEFAULT)
        if a.autotune and "autotune" not in blk_peers:
            blk_peers += ("autotune",)
        meta.update(linear_peers=lin_peers, block_peers=blk_peers)
    print(f"{len(cs)} cases; {meta}", flush=True)

    kf_dir = a.kf_dir or tempfile.mkdtemp(prefix="kfuse-models-")
    paths = M.write_all(cs, kf_dir)
    extra = a.kfuse_args.split()
    # Predictions for the GPU this runs on (`kfuse run --bench` predicts for h200 unless told).
    model = a.device or gpu_model()
    if model and not any(x.startswith("--device") for x in extra):
        extra += ["--device", model]
    meta["predicted_for"] = model or "h200"

    def on_term(signum, frame):
        raise Interrupted(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)

    records, skipped, t0 = [], [], time.time()
    i = 0
    try:
        for i, c in enumerate(cs):
            if a.budget_s and time.time() - t0 > a.budget_s:
                skipped = [x.id for x in cs[i:]]
                print(f"budget of {a.budget_s:.0f} s spent: {len(skipped)} cases not started",
                      flush=True)
                break
            rec = {"case": M.describe([c])[0]}
            msg = []
            if not a.no_kfuse:
                check = a.check_limit > 0 and c.macs <= a.check_limit
                k = run_kfuse(kfuse, str(paths[c.id]), a.reps, check, a.kfuse_timeout, extra)
                if not check:
                    k["check"] = (f"skipped (T*K*N {c.macs:.2g} > {a.check_limit:.2g})"
                                  if a.check_limit > 0 else "skipped (--check-limit 0)")
                rec["kfuse"] = k
                msg.append(f"kfuse {k['us']:.1f} us (check {k['check'].split(' (')[0]})" if k["ok"]
                           else f"kfuse FAILED: {k['error']}")
            if P is not None:
                peers = lin_peers if c.section == "linear" else blk_peers
                rec["peers"] = P.run_case(c, peers, a.reps, a.seed,
                                          log=lambda s: print(s, flush=True))
                for p, v in rec["peers"].items():
                    msg.append(f"{p} {v['us']:.1f} us{'' if v.get('ok') else ' MISMATCH'}"
                               if "us" in v else f"{p} ERROR")
            records.append(rec)
            write_json(a.json, meta, records, skipped)
            print(f"[{i + 1}/{len(cs)} {time.time() - t0:5.0f}s] {c.label} T={c.T}: "
                  + ", ".join(msg), flush=True)
    except (KeyboardInterrupt, Interrupted) as e:
        done = {r["case"]["id"] for r in records}
        skipped = [x.id for x in cs if x.id not in done]
        print(f"interrupted ({e or 'Ctrl-C'}): {len(skipped)} cases not run", flush=True)
    meta["wall_s"] = round(time.time() - t0, 1)
    write_json(a.json, meta, records, skipped)
    text = report(records, skipped, meta)
    print("\n" + text, end="", flush=True)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    if not a.kf_dir:
        shutil.rmtree(kf_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
