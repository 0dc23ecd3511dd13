"""PyTorch peers for bench/models' cases: cuBLAS, eager, torch.compile, max-autotune.

Each case of models.py is built in PyTorch the way the model's `transformers` module spells
it (bf16 on CUDA, TF32 off, inputs from a fixed seed: activations ~ N(0, 1), weights and
biases ~ 0.02 N(0, 1), laid out as the model stores them), and timed as the GPU's time:
the call is captured once in a CUDA graph and the graph is replayed, each replay timed
alone with CUDA events, the median reported (`graph_bench`, as in /work/shared/bench/peers.py).

Peers (pick with --peers or KFB_PEERS):
  cublas    linear layers only: the plain cuBLAS/cuBLASLt call. bare: F.linear(x, W) or
            torch.matmul(x, W) (Conv1D layout); bias: torch.addmm(b, x, W^T or W) (cuBLASLt
            bias epilogue); act: torch._addmm_activation(b, x, W, use_gelu=True) for a bias
            + tanh GELU (the cuBLASLt GELU_BIAS epilogue), else the GEMM followed by PyTorch's
            activation kernel (two kernels).
  eager     the model's own spelling, op by op (F.linear, torch.addmm, F.silu, F.gelu,
            NewGELU's pow/tanh formula).
  compile   torch.compile(eager, dynamic=False), default mode, compiled for the case's shape.
  autotune  torch.compile(eager, dynamic=False, mode="max-autotune-no-cudagraphs"); slow.

Every peer's output (the captured graph's output after the timed replays) is compared with
eager's: relative Frobenius error <= 1e-2 and elementwise |d| <= 2e-2 |ref| + atol with
atol = 2e-2 * max(1, rms(ref)) * max(1, sqrt(K)/16) (the GEMM's K widens it as for kfuse's
own checks). A mismatch is recorded and printed, never dropped.

    python3 bench/models/peers.py --peers cublas,eager,compile --T 1,16 --models llama3_8b
    python3 bench/models/peers.py --only-blocks --peers eager,compile,autotune --budget-s 600
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models as M  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
DEV = "cuda"
DT = torch.bfloat16
ALL_PEERS = ("cublas", "eager", "compile", "autotune")
LINEAR_DEFAULT, BLOCK_DEFAULT = ("cublas",), ("eager", "compile")


# --- timing ------------------------------------------------------------------------------

def bench(fn, reps: int = 50, warm: int = 5) -> float:
    """Median of `reps` calls of fn, each timed alone with CUDA events (ms)."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def graph_bench(fn, reps: int = 50):
    """fn captured once in a CUDA graph, each replay timed alone: (median ms, graph output).
    The graph is returned too: its memory pool holds the output."""
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(st)
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr):
        out = fn()
    ms = bench(gr.replay, reps)
    torch.cuda.synchronize()
    return ms, out, gr


# --- the computations, as the models spell them -----------------------------------------

def gelu_new(x):
    """transformers' NewGELUActivation (GPT-2's "gelu_new"), op for op."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


ACTS = {"silu": F.silu,                                            # nn.SiLU
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),      # gelu_pytorch_tanh
        "gelu_new": gelu_new}
FAST_ACTS = {"silu": F.silu, "gelu_tanh": ACTS["gelu_tanh"],
             "gelu_new": ACTS["gelu_tanh"]}  # the same function as one PyTorch kernel


def make_inputs(c: M.Case, seed: int = 0) -> list[torch.Tensor]:
    """x, then the weights (and biases) in the .kf file's input order, from a fixed seed."""
    g = torch.Generator(device=DEV)
    g.manual_seed(seed + zlib.crc32(c.id.encode()))

    def rnd(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g, device=DEV, dtype=torch.float32) * scale).to(DT)

    s = c.spec
    x = rnd(c.T, c.gemms()[0][0])
    if isinstance(s, M.Linear):
        w = rnd(s.N, s.K, scale=0.02) if s.layout == "linear" else rnd(s.K, s.N, scale=0.02)
        with_bias = s.bias and c.variant in ("bias", "act")
        return [x, w] + ([rnd(s.N, scale=0.02)] if with_bias else [])
    if s.kind == "gpt2_mlp":
        H, I = s.hidden, s.inter
        return [x, rnd(H, I, scale=0.02), rnd(I, scale=0.02), rnd(I, H, scale=0.02),
                rnd(H, scale=0.02)]
    H, I = s.hidden, s.inter
    return [x, rnd(I, H, scale=0.02), rnd(I, H, scale=0.02), rnd(H, I, scale=0.02)]


def eager_fn(c: M.Case):
    """The model's spelling of the case: fn(x, *weights)."""
    s = c.spec
    if isinstance(s, M.Linear):
        act = ACTS[s.act] if c.variant == "act" else (lambda t: t)
        if s.layout == "linear":      # nn.Linear.forward: F.linear(x, W, b)
            return lambda x, w, b=None: act(F.linear(x, w, b))
        # Conv1D.forward: torch.addmm(bias, x, weight); the bare variant has no bias
        return lambda x, w, b=None: act(torch.addmm(b, x, w) if b is not None else torch.matmul(x, w))
    if s.kind == "gpt2_mlp":          # GPT2MLP: c_proj(act(c_fc(x)))
        return lambda x, w_fc, b_fc, w_proj, b_proj: torch.addmm(
            b_proj, gelu_new(torch.addmm(b_fc, x, w_fc)), w_proj)
    act = ACTS[s.act]                 # LlamaMLP / Qwen2MLP / GemmaMLP
    return lambda x, wg, wu, wd: F.linear(act(F.linear(x, wg)) * F.linear(x, wu), wd)


def cublas_fn(c: M.Case):
    """The cuBLAS/cuBLASLt baseline of a linear case, and how it is spelled."""
    s = c.spec
    lin = s.layout == "linear"
    if c.variant == "bare":
        return (lambda x, w: F.linear(x, w)) if lin else (lambda x, w: torch.matmul(x, w)), \
            "F.linear" if lin else "torch.matmul"
    if c.variant == "bias":
        return (lambda x, w, b: torch.addmm(b, x, w.t())) if lin else \
            (lambda x, w, b: torch.addmm(b, x, w)), "torch.addmm (cuBLASLt bias epilogue)"
    if s.bias and s.act in ("gelu_new", "gelu_tanh") and hasattr(torch, "_addmm_activation"):
        return (lambda x, w, b: torch._addmm_activation(b, x, w.t() if lin else w, use_gelu=True)), \
            "torch._addmm_activation use_gelu (cuBLASLt GELU_BIAS epilogue)"
    act = FAST_ACTS[s.act]
    if s.bias:
        return (lambda x, w, b: act(torch.addmm(b, x, w.t() if lin else w))), \
            f"torch.addmm + {s.act} kernel"
    return (lambda x, w: act(F.linear(x, w) if lin else torch.matmul(x, w))), \
        f"{'F.linear' if lin else 'torch.matmul'} + {s.act} kernel"


# --- checking ------------------------------------------------------------------------------

def compare(got: torch.Tensor, ref: torch.Tensor, K: int) -> tuple[bool, str]:
    """bf16 tolerances (module docstring); (ok, numbers)."""
    if got.shape != ref.shape:
        return False, f"shape {tuple(got.shape)} vs {tuple(ref.shape)}"
    g, r = got.float(), ref.float()
    if not torch.isfinite(g).all():
        return False, f"{int((~torch.isfinite(g)).sum())} non-finite values"
    d = (g - r).abs()
    rms = r.pow(2).mean().sqrt().item()
    rel = (d.norm() / r.norm().clamp_min(1e-30)).item()
    atol = 2e-2 * max(1.0, rms) * max(1.0, math.sqrt(K) / 16)
    bad = int((d > atol + 2e-2 * r.abs()).sum())
    ok = rel <= 1e-2 and bad == 0
    return ok, f"rel {rel:.2e}, max|d| {d.max().item():.3g} (atol {atol:.3g}), {bad} elems out"


# --- one case ------------------------------------------------------------------------------

def run_case(c: M.Case, peers, reps: int = 50, seed: int = 0, log=print) -> dict:
    """Times the requested peers on case c. Returns {peer: {us, ok, check, ...}} plus
    'eager_ref' details; a peer that raises is {error: ...}."""
    res: dict = {}
    args = make_inputs(c, seed)
    kmax = max(k for k, _ in c.gemms())
    eager = eager_fn(c)
    with torch.no_grad():
        ref = eager(*args)
        torch.cuda.synchronize()
        for p in peers:
            if p == "cublas" and c.section != "linear":
                continue
            r: dict = {}
            try:
                t0 = time.time()
                if p == "cublas":
                    fn, r["spelling"] = cublas_fn(c)
                elif p == "eager":
                    fn = eager
                else:
                    torch._dynamo.reset()
                    mode = "max-autotune-no-cudagraphs" if p == "autotune" else None
                    fn = torch.compile(eager, dynamic=False, mode=mode)
                    fn(*args)  # compile (and autotune) now, outside the capture
                    torch.cuda.synchronize()
                r["compile_s"] = round(time.time() - t0, 2)
                ms, out, gr = graph_bench(lambda: fn(*args), reps)
                r["us"] = ms * 1e3
                r["ok"], r["check"] = compare(out, ref, kmax)
                if not r["ok"]:
                    log(f"  MISMATCH {p} vs eager on {c.id}: {r['check']}")
                del out, gr
            except Exception as e:  # reported, the run goes on
                r["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:300]
                log(f"  ERROR {p} on {c.id}: {r['error']}")
            res[p] = r
            if p in ("compile", "autotune"):
                torch._dynamo.reset()
    del args, ref
    torch.cuda.empty_cache()
    return res


def parse_peers(s: str | None, default) -> tuple[str, ...]:
    names = tuple(x.strip() for x in (s or "").split(",") if x.strip()) or tuple(default)
    for n in names:
        if n not in ALL_PEERS:
            raise SystemExit(f"unknown peer '{n}' (known: {', '.join(ALL_PEERS)})")
    return names


def env_info() -> dict:
    return {"torch": torch.__version__, "cuda": torch.version.cuda,
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
            "allow_tf32": torch.backends.cuda.matmul.allow_tf32}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="PyTorch peers for bench/models' cases")
    M.add_selection_args(ap)
    ap.add_argument("--peers", default=os.environ.get("KFB_PEERS", ""),
                    help="comma list of cublas,eager,compile,autotune (env KFB_PEERS; default "
                         "cublas for linear layers, eager,compile for blocks)")
    ap.add_argument("--reps", type=int, default=50, help="timed graph replays (median)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget-s", type=float, default=float(os.environ.get("KFB_BUDGET_S", 0)),
                    help="start no new case after this many seconds (0: no limit)")
    ap.add_argument("--json", help="write the raw numbers here")
    a = ap.parse_args(argv)
    cs = M.selected_cases(a)
    print(env_info(), flush=True)
    t0, results, skipped = time.time(), [], []
    for i, c in enumerate(cs):
        if a.budget_s and time.time() - t0 > a.budget_s:
            skipped = [x.id for x in cs[i:]]
            break
        peers = parse_peers(a.peers, LINEAR_DEFAULT if c.section == "linear" else BLOCK_DEFAULT)
        res = run_case(c, peers, a.reps, a.seed)
        results.append({"id": c.id, "peers": res})
        cells = ", ".join(f"{p} {r['us']:.1f} us{'' if r['ok'] else ' MISMATCH'}" if "us" in r
                          else f"{p} ERROR" for p, r in res.items())
        print(f"[{i + 1}/{len(cs)} {time.time() - t0:6.0f}s] {c.label} T={c.T}: {cells}", flush=True)
    if skipped:
        print(f"budget of {a.budget_s:.0f} s spent: {len(skipped)} cases skipped: "
              + ", ".join(skipped), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"env": env_info(), "results": results, "skipped": skipped}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
