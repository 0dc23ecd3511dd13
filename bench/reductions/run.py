"""The reductions benchmark's driver (issue 19): kfuse against eager PyTorch and
torch.compile on softmax, log_softmax, RMSNorm, LayerNorm and residual add + RMSNorm.

Run from the repo root on the GPU machine (README.md beside this says what each column is):

    python3 bench/reductions/run.py --budget-s 400 --json /tmp/red.json --md /tmp/red.md
    python3 bench/reductions/run.py --dtypes bf16 --shapes large --no-peers
    python3 bench/reductions/run.py --from-json a.json b.json --md /tmp/red.md   # merge runs

First the roofs of this run: the device copy (peers.copy_roof: torch's dst.copy_(src) of
--roof-mb in a CUDA graph), an empty kernel's replay (peers.empty_kernel), and kfuse's own
(its `--bench` copy row on a 256 MB graph, and a 1-element graph's replay). Then for every
case of cases.py: `kfuse report FILE.kf --device h200 --json` (predicted bytes and kernel
count), `kfuse run FILE.kf --bench --reps N` (with --check where M*N <= --check-limit, the
interpreter's cost), parsed by bench/models/run.py's parser, then the peers in this
process. A kfuse failure is recorded with its error text and the run goes on; the JSON is
rewritten after each case; --budget-s starts no new case after that many seconds.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


C = _load("cases", os.path.join(HERE, "cases.py"))  # peers.py's `import cases` finds this one
# kfuse run --bench's parser and runner (parse_kfuse, run_kfuse, first_error, fnum, write_json)
MR = _load("models_run", os.path.join(ROOT, "bench", "models", "run.py"))


# --- kfuse ---------------------------------------------------------------------------------

def run_report(kfuse: str, kf: str, timeout: float) -> dict:
    """`kfuse report KF --device h200 --json`: the fused plan's bytes and kernels."""
    try:
        p = subprocess.run([kfuse, "report", kf, "--device", "h200", "--json"],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timeout: kfuse report took more than {timeout:.0f} s"}
    if p.returncode != 0:
        return {"ok": False, "rc": p.returncode, "error": MR.first_error(p.stderr, p.stdout)}
    try:
        obj, _ = json.JSONDecoder().raw_decode(p.stdout[p.stdout.index("{"):])
        f, u = obj["fused"], obj["unfused"]
        exp = obj.get("expected") or {}
        return {"ok": True, "kernels": f["launches"], "bytes": f["bytes"],
                "bytes_read": f["bytes_read"], "bytes_written": f["bytes_written"],
                "predicted_us": f["seconds"] * 1e6,
                "expected_us": exp["seconds"] * 1e6 if "seconds" in exp else None,
                "unfused_kernels": u["launches"], "unfused_bytes": u["bytes"],
                "per_kernel": [{k: v for k, v in kk.items() if k in ("name", "ops", "bytes_read",
                                                                   "bytes_written", "seconds")}
                               for kk in f.get("kernels", [])]}
    except (ValueError, KeyError, TypeError) as e:
        return {"ok": False, "error": f"cannot parse kfuse report --json: {type(e).__name__}: {e}"[:300]}


def kfuse_roofs(kfuse: str, kf_dir: str, reps: int, timeout: float, extra: list[str]) -> dict:
    """kfuse's own copy roof (the copy row of a 256 MB f32 graph) and launch floor (a
    1-element graph's replay), measured the way its cases are."""
    out = {}
    for name, text in (("kfuse_roof", C.ROOF_KF), ("kfuse_floor", C.FLOOR_KF)):
        path = os.path.join(kf_dir, f"_{name}.kf")
        with open(path, "w") as f:
            f.write(text)
        out[name] = MR.run_kfuse(kfuse, path, reps, False, timeout, extra)
    return out


# --- tables ----------------------------------------------------------------------------------

fnum = MR.fnum


def kf_us(rec: dict):
    k = rec.get("kfuse") or {}
    return k.get("us") if k.get("ok") else None


def peer(rec: dict, p: str, key: str = "us"):
    r = (rec.get("peers") or {}).get(p) or {}
    return r.get(key) if "error" not in r else None


def peer_cell(rec: dict, p: str, key: str = "us") -> str:
    r = (rec.get("peers") or {}).get(p)
    if not r:
        return "-"
    if "error" in r:
        return "ERROR"
    return fnum(r.get(key)) + ("" if r.get("ok") else " MISMATCH")


def kf_cell(rec: dict) -> str:
    k = rec.get("kfuse")
    if not k:
        return "-"
    if not k.get("ok"):
        return "FAIL: " + str(k.get("error", "?")).replace("|", "/")[:160]
    return fnum(k["us"])


def pct(rec: dict, us) -> str:
    gbps = rec.get("roof_gbps")
    if not us or not gbps:
        return "-"
    return f"{100 * rec['case']['must_move'] / (us * 1e-6) / (gbps * 1e9):.0f}%"


def ratio(a, b) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def kernels_cell(rec: dict) -> str:
    k, r = rec.get("kfuse") or {}, rec.get("report") or {}
    if k.get("ok") and "n_kernels" in k:
        return str(k["n_kernels"])
    return f"{r['kernels']} (report)" if r.get("ok") else "-"


def pred_cell(rec: dict) -> str:
    r = rec.get("report")
    if not r:
        return "-"
    if not r.get("ok"):
        return "report FAIL"
    return f"{r['bytes'] / 1e6:.4g} MB ({r['bytes'] / rec['case']['must_move']:.2f}x)"


def check_cell(rec: dict) -> str:
    c = str((rec.get("kfuse") or {}).get("check", "-"))
    return "ok" if c == "ok" else "FAIL" if c.startswith("FAIL") else \
        "skip" if c.startswith("skip") else "-"


def mxn(c: dict) -> str:
    return f"{c['M']} x {c['N']}"


def large_table(recs: list[dict]) -> list[str]:
    head = ["case", "dtype", "M x N", "must move", "kfuse us", "kfuse GB/s", "kfuse % roof",
            "eager us", "eager % roof", "compile us", "compile % roof", "kfuse/compile",
            "kernels", "predicted bytes (x must move)", "check"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in recs:
        c, ku = r["case"], kf_us(r)
        cu = peer(r, "compile") if (r.get("peers") or {}).get("compile", {}).get("ok") else None
        lines.append("| " + " | ".join([
            c["kind"], c["dtype"], mxn(c), f"{c['must_move'] / 1e6:.4g} MB", kf_cell(r),
            fnum(c["must_move"] / (ku * 1e-6) / 1e9) if ku else "-", pct(r, ku),
            peer_cell(r, "eager"), pct(r, peer(r, "eager")), peer_cell(r, "compile"),
            pct(r, peer(r, "compile")), ratio(ku, cu), kernels_cell(r), pred_cell(r),
            check_cell(r)]) + " |")
    both = [(r, kf_us(r) / peer(r, "compile")) for r in recs
            if kf_us(r) and peer(r, "compile") and r["peers"]["compile"].get("ok")]
    slower = [f"{r['case']['id']} ({x:.2f})" for r, x in both if x > 1]
    lines.append("")
    if both:
        g = math.exp(sum(math.log(x) for _, x in both) / len(both))
        lines.append(f"kfuse no slower than torch.compile on {len(both) - len(slower)} of "
                     f"{len(both)} cases with both times; geometric mean kfuse/compile "
                     f"**{g:.3f}** (< 1: kfuse faster)" +
                     (f". Slower: {', '.join(slower)}" if slower else ""))
    else:
        lines.append("kfuse/compile: no case with both times.")
    return lines


def small_table(recs: list[dict]) -> list[str]:
    head = ["case", "dtype", "M x N", "kfuse us", "empty kernel us", "kfuse/empty",
            "compile us", "kfuse/compile", "eager us", "compile us (batched)", "kernels",
            "check"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    within, n = [], 0
    for r in recs:
        c, ku, eu = r["case"], kf_us(r), r.get("empty_us")
        cu = peer(r, "compile") if (r.get("peers") or {}).get("compile", {}).get("ok") else None
        if ku and eu:
            n += 1
            within += [r] if ku / eu <= 1.2 else []
        lines.append("| " + " | ".join([
            c["kind"], c["dtype"], mxn(c), kf_cell(r), fnum(eu), ratio(ku, eu),
            peer_cell(r, "compile"), ratio(ku, cu), peer_cell(r, "eager"),
            peer_cell(r, "compile", "us_batched"), kernels_cell(r), check_cell(r)]) + " |")
    lines.append("")
    lines.append(f"kfuse within 1.2x of the empty kernel's replay on {len(within)} of {n} cases "
                 f"with both times." if n else "kfuse/empty: no case with both times.")
    return lines


def roof_lines(meta: dict) -> list[str]:
    out = []
    cp, em = meta.get("copy") or {}, meta.get("empty") or {}
    if "gbps" in cp:
        out.append(f"- device copy (the roof of `% roof`): **{cp['gbps']:.0f} GB/s**, "
                   f"{cp['spelling']}, {cp['size_bytes'] / 1e6:.0f} MB copied ({cp['bytes_moved'] / 1e6:.0f} "
                   f"MB moved) in {cp['us']:.1f} us (batched replays: {cp['gbps_batched']:.0f} GB/s)")
    elif cp.get("error"):
        out.append(f"- device copy (torch): ERROR {cp['error']}")
    if "us" in em:
        out.append(f"- empty kernel: **{em['us']:.2f} us** per replay timed alone "
                   f"({em['us_batched']:.2f} us batched), {em['spelling']}")
    elif em.get("error"):
        out.append(f"- empty kernel (torch): ERROR {em['error']}")
    kr, kf = meta.get("kfuse_roof") or {}, meta.get("kfuse_floor") or {}
    if kr.get("ok") and "copy" in kr:
        out.append(f"- kfuse's own device copy (`kfuse run --bench` copy row, "
                   f"{kr['copy']['bytes'] / 1e6:.0f} MB moved): {kr['copy_gbps']:.0f} GB/s; "
                   f"its 256 MB f32 `neg` graph: {kr['us']:.1f} us")
    elif kr:
        out.append(f"- kfuse's own device copy: FAIL {kr.get('error')}")
    if kf.get("ok"):
        out.append(f"- kfuse's 1-element graph (its launch floor): {kf['us']:.2f} us per replay")
    elif kf:
        out.append(f"- kfuse's 1-element graph: FAIL {kf.get('error')}")
    if meta.get("roof_source"):
        out.append(f"- `% roof` uses {meta['roof_source']}; `empty kernel us` uses "
                   f"{meta.get('empty_source', '-')}")
    return out


def report(records: list[dict], skipped: list[str], metas: list[dict]) -> str:
    m0 = metas[0] if metas else {}
    out = [f"# Reductions (issue 19): kfuse vs PyTorch ({m0.get('gpu') or 'GPU ?'}, "
           f"{m0.get('date', '')}, commit {m0.get('commit', '?')}, torch {m0.get('torch', '-')}, "
           f"{m0.get('kfuse_version', 'kfuse -')})", ""]
    for i, m in enumerate(metas):
        if len(metas) > 1:
            out.append(f"Run {i + 1}: {m.get('gpu')}, {m.get('date')}, commit {m.get('commit')}, "
                       f"argv {' '.join(m.get('argv', []))}")
        out += roof_lines(m)
    if m0.get("peers_skipped"):
        out.append(f"- peers not run: {m0['peers_skipped']}")
    big = [r for r in records if not r["case"]["small"]]
    small = [r for r in records if r["case"]["small"]]
    if big:
        out += ["", "## Bandwidth cases (times in us per call, CUDA graph replay timed alone; "
                "% roof: must-move bytes / time / device copy GB/s; kfuse/compile <= 1: kfuse "
                "no slower)", "", *large_table(big)]
    if small:
        out += ["", "## Small cases (launch-bound: kfuse within 1.2x of an empty kernel's "
                "replay)", "", *small_table(small)]
    problems = []
    for r in records:
        cid, k, rp = r["case"]["id"], r.get("kfuse") or {}, r.get("report") or {}
        if rp and not rp.get("ok"):
            problems.append(f"- kfuse report failed on {cid}: {rp.get('error')}")
        if k and not k.get("ok"):
            problems.append(f"- kfuse run failed on {cid}: {k.get('error')}")
        if str(k.get("check", "")).startswith("FAIL"):
            problems.append(f"- kfuse --check failed on {cid}: {k['check']}")
        for p, v in (r.get("peers") or {}).items():
            if "error" in v:
                problems.append(f"- {p} failed on {cid}: {v['error']}")
            elif not v.get("ok"):
                problems.append(f"- {p} does not match float64 on {cid}: {v.get('check')}")
    if problems:
        out += ["", "## Failures and mismatches", "", *problems]
    if skipped:
        out += ["", f"## Not run ({len(skipped)} cases: budget spent or interrupted)", "",
                ", ".join(skipped)]
    return "\n".join(out) + "\n"


def emit(text: str, md: str | None) -> None:
    print("\n" + text, end="", flush=True)
    if md:
        with open(md, "w") as f:
            f.write(text)


def from_json(paths: list[str], md: str | None) -> int:
    by_id, skipped, metas = {}, [], []
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        metas.append(d.get("meta", {}))
        for r in d.get("records", []):
            by_id[r["case"]["id"]] = r
        skipped += d.get("skipped", [])
    order = {c.id: i for i, c in enumerate(C.cases())}
    recs = sorted(by_id.values(), key=lambda r: order.get(r["case"]["id"], len(order)))
    emit(report(recs, [s for s in dict.fromkeys(skipped) if s not in by_id], metas), md)
    return 0


# --- the run ---------------------------------------------------------------------------------

def _sh(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


class Interrupted(Exception):
    pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="kfuse vs PyTorch on softmax and norms (issue 19)")
    C.add_selection_args(ap)
    env = os.environ.get
    ap.add_argument("--kfuse", default=env("KFUSE", "build/bin/kfuse"), help="the kfuse binary")
    ap.add_argument("--no-peers", action="store_true", help="kfuse only (no torch needed)")
    ap.add_argument("--no-kfuse", action="store_true", help="peers only")
    ap.add_argument("--peers", default="eager,compile", help="comma list of eager,compile")
    ap.add_argument("--reps", type=int, default=50, help="kfuse run --bench --reps")
    ap.add_argument("--peer-reps", type=int, default=100, help="peer replays timed alone (median)")
    ap.add_argument("--roof-mb", type=float, default=1024, help="device copy size, MB (>= 256)")
    ap.add_argument("--check-limit", type=float, default=float(1 << 26),
                    help="kfuse --check only where M*N <= this (the interpreter's time; 0: never)")
    ap.add_argument("--kfuse-timeout", type=float, default=180, help="seconds per kfuse command")
    ap.add_argument("--kfuse-args", default="", help="extra `kfuse run` arguments")
    ap.add_argument("--budget-s", type=float, default=float(env("RED_BUDGET", 0)),
                    help="start no new case after this many seconds (env RED_BUDGET; 0: no limit)")
    ap.add_argument("--json", help="write every raw number here (rewritten after each case)")
    ap.add_argument("--md", help="also write the tables to this Markdown file")
    ap.add_argument("--kf-dir", help="write the .kf files here and keep them (default: temp)")
    ap.add_argument("--seed", type=int, default=0, help="the peers' input seed")
    ap.add_argument("--from-json", nargs="+", metavar="JSON",
                    help="print (and --md: write) the tables of earlier runs, merged by case")
    a = ap.parse_args(argv)
    if a.from_json:
        return from_json(a.from_json, a.md)
    if a.roof_mb < 256:
        raise SystemExit("--roof-mb must be at least 256 (a smaller copy does not reach HBM speed)")
    cs = C.selected(a)
    if not cs:
        raise SystemExit("no case selected")
    kfuse = None if a.no_kfuse else a.kfuse
    if kfuse and not (os.path.isfile(kfuse) and os.access(kfuse, os.X_OK)):
        raise SystemExit(f"kfuse binary '{kfuse}' not found (build it, pass --kfuse, or --no-kfuse)")
    meta: dict = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "argv": sys.argv[1:] if argv is None
                  else list(argv), "reps": a.reps, "peer_reps": a.peer_reps,
                  "check_limit": a.check_limit,
                  "commit": _sh(["git", "-C", ROOT, "describe", "--always", "--dirty"]),
                  "gpu": (_sh(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
                          .splitlines() or [None])[0]}
    if kfuse:
        meta["kfuse_version"] = _sh([kfuse, "--version"]) or "kfuse ?"
    P, peers = None, ()
    if not a.no_peers:
        try:
            P = _load("red_peers", os.path.join(HERE, "peers.py"))  # imports torch
            meta.update({k: v for k, v in P.env_info().items() if v or k != "gpu"})
            peers = tuple(p for p in a.peers.split(",") if p)
            if not P.torch.cuda.is_available():
                raise RuntimeError("torch sees no CUDA device")
        except Exception as e:  # no torch, or no GPU for it: kfuse only, said so
            meta["peers_skipped"] = f"{type(e).__name__}: {e}"[:300]
            print(f"peers not run: {meta['peers_skipped']}", flush=True)
            P = None
    print(f"{len(cs)} cases; {meta}", flush=True)

    kf_dir = a.kf_dir or tempfile.mkdtemp(prefix="kfuse-red-")
    paths = C.write_all(cs, kf_dir)
    extra = a.kfuse_args.split()

    def on_term(signum, frame):
        raise Interrupted(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)

    records, skipped, t0 = [], [], time.time()
    try:
        if P is not None:
            for key, fn in (("copy", lambda: P.copy_roof(a.roof_mb, a.peer_reps)),
                            ("empty", lambda: P.empty_kernel(2 * a.peer_reps))):
                try:
                    meta[key] = fn()
                except Exception as e:
                    meta[key] = {"error": f"{type(e).__name__}: {e}"[:300]}
        if kfuse:
            meta.update(kfuse_roofs(kfuse, kf_dir, a.reps, a.kfuse_timeout, extra))
        if "gbps" in meta.get("copy", {}):
            meta["roof_gbps"], meta["roof_source"] = meta["copy"]["gbps"], "the torch device copy"
        elif (meta.get("kfuse_roof") or {}).get("copy_gbps"):
            meta["roof_gbps"] = meta["kfuse_roof"]["copy_gbps"]
            meta["roof_source"] = "kfuse's own device copy (no torch copy)"
        if "us" in meta.get("empty", {}):
            meta["empty_us"], meta["empty_source"] = meta["empty"]["us"], "the torch empty kernel"
        elif (meta.get("kfuse_floor") or {}).get("ok"):
            meta["empty_us"] = meta["kfuse_floor"]["us"]
            meta["empty_source"] = "kfuse's 1-element graph (no torch)"
        print(f"roof {meta.get('roof_gbps')} GB/s ({meta.get('roof_source')}), empty "
              f"{meta.get('empty_us')} us ({meta.get('empty_source')})", flush=True)
        for i, c in enumerate(cs):
            if a.budget_s and time.time() - t0 > a.budget_s:
                skipped = [x.id for x in cs[i:]]
                print(f"budget of {a.budget_s:.0f} s spent: {len(skipped)} cases not started",
                      flush=True)
                break
            tc = time.time()
            rec: dict = {"case": C.describe(c), "roof_gbps": meta.get("roof_gbps"),
                         "empty_us": meta.get("empty_us")}
            msg = []
            if kfuse:
                rec["report"] = run_report(kfuse, str(paths[c.id]), a.kfuse_timeout)
                check = 0 < a.check_limit and c.M * c.N <= a.check_limit
                k = MR.run_kfuse(kfuse, str(paths[c.id]), a.reps, check, a.kfuse_timeout, extra)
                if not check:
                    k["check"] = (f"skipped (M*N {c.M * c.N} > --check-limit {a.check_limit:.0f})"
                                  if a.check_limit > 0 else "skipped (--check-limit 0)")
                rec["kfuse"] = k
                msg.append(f"kfuse {k['us']:.1f} us (check {str(k['check']).split(' (')[0]})"
                           if k.get("ok") else f"kfuse FAILED: {k.get('error')}")
            if P is not None:
                rec["peers"] = P.run_case(c, peers, a.peer_reps, a.seed,
                                          log=lambda s: print(s, flush=True))
                msg += [f"{p} {v['us']:.1f} us{'' if v.get('ok') else ' MISMATCH'}"
                        if "us" in v else f"{p} ERROR" for p, v in rec["peers"].items()]
            rec["wall_s"] = round(time.time() - tc, 1)
            records.append(rec)
            MR.write_json(a.json, meta, records, skipped)
            print(f"[{i + 1}/{len(cs)} {time.time() - t0:5.0f}s] {c.id}: " + ", ".join(msg),
                  flush=True)
    except (KeyboardInterrupt, Interrupted) as e:
        done = {r["case"]["id"] for r in records}
        skipped = [x.id for x in cs if x.id not in done]
        print(f"interrupted ({e or 'Ctrl-C'}): {len(skipped)} cases not run", flush=True)
    meta["wall_s"] = round(time.time() - t0, 1)
    MR.write_json(a.json, meta, records, skipped)
    emit(report(records, skipped, [meta]), a.md)
    if not a.kf_dir:
        shutil.rmtree(kf_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
