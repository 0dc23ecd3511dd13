#!/usr/bin/env python3
"""Issue 17's epilogue-cost table: a bare GEMM against the same GEMM with a 20-op elementwise
epilogue (transcendentals included, one bias read) and with two extra [M, N] tensors read,
at three sizes, each as `kfuse run --bench` times it (one CUDA graph, median of --reps) on
the same GPU in the same run. The bound the issue sets: an epilogue costs at most its extra
bytes at the copy bandwidth measured in the same run, plus 5% of the bare GEMM.

  python3 bench/epilogue/run.py [--kfuse build/bin/kfuse] [--md OUT.md] [--json OUT.json]
"""
import argparse
import importlib.util
import json
import os
import sys
import tempfile

# bench/models/run.py runs and parses `kfuse run --bench` (loaded by path: both files are run.py).
_MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")
sys.path.insert(0, _MODELS)
_spec = importlib.util.spec_from_file_location("models_run", os.path.join(_MODELS, "run.py"))
_models_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_models_run)
run_kfuse = _models_run.run_kfuse

# (M, N, K): a square GEMM, Llama-3-8B's up projection at T = 2048, and a large square one.
SIZES = [(4096, 4096, 4096), (2048, 14336, 4096), (8192, 8192, 8192)]

# 20 elementwise ops after the matmul, spelled as a model might: bias, a tanh-GELU written
# out with pow, a sigmoid gate, exp/log, clamps; one [N] bias read.
OPS20 = """\
  %b = input bf16[{N}]
  %h1 = add %h, %b
  %c = pow %h1, 3.0
  %c2 = mul %c, 0.044715
  %s = add %h1, %c2
  %s2 = mul %s, 0.7978845608
  %t = tanh %s2
  %t1 = add %t, 1.0
  %t2 = mul %t1, 0.5
  %gl = mul %h1, %t2
  %sg = sigmoid %h1
  %m = mul %gl, %sg
  %e = exp %sg
  %l = log %e
  %r = relu %m
  %a = add %r, %l
  %n = neg %a
  %ab = abs %n
  %q = sqrt %ab
  %d = div %q, 3.0
  %y = sub %d, 0.25
  output %y"""

TWO = """\
  %r1 = input bf16[{M}, {N}]
  %r2 = input bf16[{M}, {N}]
  %h1 = add %h, %r1
  %y = mul %h1, %r2
  output %y"""


def graph(variant: str, M: int, N: int, K: int) -> str:
    body = {"bare": "  output %h", "ops20": OPS20, "two_tensors": TWO}[variant].format(M=M, N=N)
    return (f"graph {variant}_{M}x{N}x{K} {{\n  %x = input bf16[{M}, {K}]\n"
            f"  %w = input bf16[{N}, {K}]\n  %h = matmul %x, %w, trans_b=true\n{body}\n}}\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kfuse", default="build/bin/kfuse")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--md")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows, raw = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for (M, N, K) in SIZES:
            res = {}
            for v in ("bare", "ops20", "two_tensors"):
                path = os.path.join(tmp, f"{v}_{M}_{N}_{K}.kf")
                with open(path, "w") as f:
                    f.write(graph(v, M, N, K))
                res[v] = run_kfuse(args.kfuse, path, args.reps, False, 300, [])
                raw[f"{v} {M}x{N}x{K}"] = res[v]
            if not all(r.get("ok", True) and "us" in r for r in res.values()):
                rows.append(f"| {M}x{N}x{K} | failed: "
                            f"{'; '.join(str(r.get('error')) for r in res.values() if 'us' not in r)} |")
                continue
            bare = res["bare"]["us"]
            gbps = max(r.get("copy_gbps", 0) for r in res.values())
            for v, extra in (("ops20", 2 * N), ("two_tensors", 2 * 2 * M * N)):
                t = res[v]["us"]
                bound = bare * 1.05 + extra / (gbps * 1e3)  # bytes / (GB/s) in us
                rows.append(f"| {M}x{N}x{K} | {v} | {bare:.1f} | {t:.1f} | {t / bare:.3f} | "
                            f"{extra / 1e6:.2f} | {bound:.1f} | {'yes' if t <= bound else 'NO'} |")
    head = ("| M x N x K | epilogue | bare GEMM us | with epilogue us | ratio | extra MB read | "
            "bound us (bare x 1.05 + extra at copy) | within |\n|---|---|---|---|---|---|---|---|")
    md = head + "\n" + "\n".join(rows) + "\n"
    print(md, end="")
    if args.md:
        open(args.md, "w").write(md)
    if args.json:
        json.dump(raw, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
