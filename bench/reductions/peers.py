"""PyTorch peers for bench/reductions' cases (issue 19): eager and torch.compile, each in a
CUDA graph, the device copy roof and an empty kernel's replay.

Each case of cases.py is spelled in PyTorch the way models write it:

  softmax      torch.softmax(x, -1)
  log_softmax  torch.log_softmax(x, -1)
  rmsnorm      LlamaRMSNorm.forward: h = x.to(f32); h = h * rsqrt(h.pow(2).mean(-1, keepdim)
               + 1e-6); w * h.to(x.dtype)
  layernorm    F.layer_norm(x, (N,), w, b, eps=1e-5)
  add_rmsnorm  h = x + res; (h, rmsnorm(h, w))

Inputs from a fixed seed in the case's dtype: x and res ~ N(0, 1), w ~ 1 + 0.1 N(0, 1),
b ~ 0.1 N(0, 1). Peers: `eager` (the function above) and `compile`
(torch.compile(eager, dynamic=False), default mode, compiled for the case's one shape after
torch._dynamo.reset(), so it never turns to dynamic shapes).

Timing (`graph_times`): the call is run 3 times on a side stream, captured once in a CUDA
graph, and the graph replayed:
  - `us`: each replay timed alone between two CUDA events, synchronized, the median of
    `reps`: the same method as `kfuse run --bench` (runtime/Timing.cpp medianMs), so the
    two are compared like with like;
  - `us_batched`: `batch` replays between two events, divided by batch, the median of
    `rounds` such samples (the per-call time with graph launches overlapping).

Every peer's outputs (those of the captured graph, after the timed replays) are compared
with a float64 reference computed in torch from the same inputs upcast (the formulas
above without intermediate rounding): per element |got - ref| <= elem (1 + |ref|) and
||got - ref|| / ||ref|| <= norm, (elem, norm) = bf16 (3e-2, 1e-2), f32 (1e-4, 1e-5). A
mismatch is recorded, never dropped.

`copy_roof`: dst.copy_(src) of `mb` MB (default 1024) in a CUDA graph; bytes moved =
2 x size. `empty_kernel`: t.add_(1) on a 1-element tensor in a CUDA graph.

    python3 bench/reductions/peers.py --cases softmax --dtypes bf16 --shapes 4096x4096
    python3 bench/reductions/peers.py --selftest     # the reference and check logic, CPU only
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import zlib

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as C  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
TOL = {"bf16": (3e-2, 1e-2), "f16": (4e-3, 1e-3), "f32": (1e-4, 1e-5)}
PEERS = ("eager", "compile")


# --- timing ----------------------------------------------------------------------------------

def _capture(fn):
    """fn run 3 times on a side stream, then captured once: (graph, its output)."""
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(st)
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr):
        out = fn()
    torch.cuda.synchronize()
    return gr, out


def replay_times(gr, reps: int = 100, rounds: int = 21, batch: int = 20, warm: int = 5) -> dict:
    """Medians (us) of one replay alone and of `batch` replays per event pair (module doc)."""
    for _ in range(warm):
        gr.replay()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    alone, batched = [], []
    for _ in range(reps):
        a.record()
        gr.replay()
        b.record()
        b.synchronize()
        alone.append(a.elapsed_time(b) * 1e3)
    for _ in range(rounds):
        a.record()
        for _ in range(batch):
            gr.replay()
        b.record()
        b.synchronize()
        batched.append(a.elapsed_time(b) * 1e3 / batch)
    alone.sort()
    batched.sort()
    return {"us": alone[len(alone) // 2], "us_min": alone[0], "us_max": alone[-1],
            "us_batched": batched[len(batched) // 2], "reps": reps, "rounds": rounds,
            "batch": batch}


def graph_times(fn, reps: int = 100):
    """fn captured in a CUDA graph and replayed: (times dict, output, graph). The graph is
    returned too: its memory pool holds the output."""
    gr, out = _capture(fn)
    return replay_times(gr, reps), out, gr


def copy_roof(mb: float = 1024, reps: int = 100) -> dict:
    """The device copy: dst.copy_(src) of mb MB in a CUDA graph; bytes = 2 x size."""
    n = int(mb * 1e6) // 4
    src = torch.randn(n, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    t, _, gr = graph_times(lambda: dst.copy_(src), reps)
    moved = 2 * 4 * n
    ok = bool(torch.equal(dst, src))
    res = {"bytes_moved": moved, "size_bytes": 4 * n, **t, "gbps": moved / (t["us"] * 1e-6) / 1e9,
           "gbps_batched": moved / (t["us_batched"] * 1e-6) / 1e9, "ok": ok,
           "spelling": "dst.copy_(src), f32, in a CUDA graph"}
    del src, dst, gr
    torch.cuda.empty_cache()
    return res


def empty_kernel(reps: int = 200) -> dict:
    """A trivial kernel's replay: t.add_(1) on a 1-element f32 tensor in a CUDA graph."""
    t = torch.zeros(1, device="cuda")
    r, _, gr = graph_times(lambda: t.add_(1), reps)
    del gr
    return {**r, "spelling": "t.add_(1), 1 element, in a CUDA graph"}


# --- the functions ---------------------------------------------------------------------------

def rms_norm(x, w, eps=C.RMS_EPS):
    """LlamaRMSNorm.forward, as Hugging Face writes it."""
    dt = x.dtype
    h = x.to(torch.float32)
    var = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(var + eps)
    return w * h.to(dt)


def eager_fn(kind: str, N: int):
    if kind == "softmax":
        return lambda x: torch.softmax(x, -1)
    if kind == "log_softmax":
        return lambda x: torch.log_softmax(x, -1)
    if kind == "rmsnorm":
        return rms_norm
    if kind == "layernorm":
        return lambda x, w, b: F.layer_norm(x, (N,), w, b, eps=C.LN_EPS)
    if kind == "add_rmsnorm":
        def add_rms(x, res, w):
            h = x + res
            return h, rms_norm(h, w)
        return add_rms
    raise ValueError(kind)


def reference(c: C.Case, args: list[torch.Tensor]) -> list[torch.Tensor]:
    """The case's outputs in float64 from the inputs upcast, without intermediate rounding."""
    a = [t.double() for t in args]
    x = a[0]
    if c.kind == "softmax":
        return [torch.softmax(x, -1)]
    if c.kind == "log_softmax":
        return [torch.log_softmax(x, -1)]
    if c.kind == "layernorm":
        mu = x.mean(-1, keepdim=True)
        d = x - mu
        return [d * torch.rsqrt((d * d).mean(-1, keepdim=True) + C.LN_EPS) * a[1] + a[2]]
    if c.kind == "add_rmsnorm":
        x = x + a[1]
    w = a[-1]
    y = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + C.RMS_EPS) * w
    return [x, y] if c.kind == "add_rmsnorm" else [y]


def make_inputs(c: C.Case, seed: int = 0, device: str = "cuda") -> list[torch.Tensor]:
    """The inputs in the .kf file's order, from a fixed seed per case."""
    g = torch.Generator(device=device)
    g.manual_seed(seed + zlib.crc32(c.id.encode()))
    dt = DTYPES[c.dtype]
    out = []
    for name, shape in c.inputs():
        t = torch.randn(*shape, generator=g, device=device, dtype=torch.float32)
        if name == "w":
            t = 1 + 0.1 * t
        elif name == "b":
            t = 0.1 * t
        out.append(t.to(dt))
    return out


def compare(got, ref: list[torch.Tensor], dtype: str) -> tuple[bool, str]:
    """(ok, numbers) of every output against its float64 reference (module doc)."""
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    if len(got) != len(ref):
        return False, f"{len(got)} outputs, expected {len(ref)}"
    elem, norm = TOL[dtype]
    ok, notes = True, []
    for i, (g, r) in enumerate(zip(got, ref)):
        if tuple(g.shape) != tuple(r.shape):
            ok = False
            notes.append(f"out{i}: shape {tuple(g.shape)} vs {tuple(r.shape)}")
            continue
        gd = g.double()
        d = (gd - r).abs()
        bad = int((~(d <= elem * (1 + r.abs()))).sum())  # NaN counts as bad
        rel = (d.norm() / r.norm().clamp_min(1e-300)).item()
        good = bad == 0 and rel <= norm
        ok = ok and good
        notes.append(f"out{i}: rel {rel:.2e}, max|d| {d.max().item():.3g}, {bad} elems out")
    return ok, "; ".join(notes)


# --- one case --------------------------------------------------------------------------------

def _err(e: Exception) -> str:
    s = str(e).strip()
    return f"{type(e).__name__}: {s.splitlines()[0] if s else ''}"[:300]


def run_case(c: C.Case, peers=PEERS, reps: int = 100, seed: int = 0, log=print) -> dict:
    """Times the peers on case c: {peer: {us, us_batched, ok, check, compile_s, ...}}; a
    peer that raised is {error: ...}."""
    res: dict = {}
    try:
        args = make_inputs(c, seed)
        ref = reference(c, args)
    except Exception as e:  # e.g. out of memory: reported, the run goes on
        err = _err(e)
        log(f"  ERROR inputs/reference of {c.id}: {err}")
        torch.cuda.empty_cache()
        return {p: {"error": "inputs/reference: " + err} for p in peers}
    eager = eager_fn(c.kind, c.N)
    with torch.no_grad():
        for p in peers:
            r: dict = {}
            gr = out = None
            try:
                t0 = time.time()
                fn = eager
                if p == "compile":
                    torch._dynamo.reset()
                    fn = torch.compile(eager, dynamic=False)
                    fn(*args)  # compile now, outside the capture
                    torch.cuda.synchronize()
                elif p != "eager":
                    raise ValueError(f"unknown peer {p}")
                r["compile_s"] = round(time.time() - t0, 2)
                t, out, gr = graph_times(lambda: fn(*args), reps)
                r.update(t)
                r["ok"], r["check"] = compare(out, ref, c.dtype)
                if not r["ok"]:
                    log(f"  MISMATCH {p} vs float64 on {c.id}: {r['check']}")
            except Exception as e:  # reported, the run goes on
                r["error"] = _err(e)
                log(f"  ERROR {p} on {c.id}: {r['error']}")
            del gr, out
            res[p] = r
            if p == "compile":
                torch._dynamo.reset()
    del args, ref
    torch.cuda.empty_cache()
    return res


def env_info() -> dict:
    cuda = torch.cuda.is_available()
    return {"torch": torch.__version__, "cuda": torch.version.cuda,
            "gpu": torch.cuda.get_device_name() if cuda else None}


def selftest() -> int:
    """The reference and the check on CPU tensors: each kind's torch function against its
    float64 reference (must pass), and a perturbed output (must fail)."""
    fails = 0
    for c in C.cases(shapes=["7x300"]):
        args = make_inputs(c, 0, device="cpu")
        ref = reference(c, args)
        got = eager_fn(c.kind, c.N)(*args)
        ok, msg = compare(got, ref, c.dtype)
        outs = list(got) if isinstance(got, tuple) else [got]
        bad = [o.clone() for o in outs]
        bad[-1].view(-1)[5] += 0.5 + bad[-1].view(-1)[5].abs()
        nok, nmsg = compare(bad, ref, c.dtype)
        fails += (not ok) + nok
        print(f"{'ok  ' if ok else 'FAIL'} {c.id}: {msg}; perturbed "
              f"{'caught' if not nok else 'NOT CAUGHT'}: {nmsg}")
    print(f"{fails} failure(s)")
    return 1 if fails else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="PyTorch peers for bench/reductions' cases")
    C.add_selection_args(ap)
    ap.add_argument("--peers", default="eager,compile", help="comma list of eager,compile")
    ap.add_argument("--reps", type=int, default=100, help="replays timed alone (median)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--roof-mb", type=float, default=1024, help="device copy size (MB)")
    ap.add_argument("--json", help="write the raw numbers here")
    ap.add_argument("--selftest", action="store_true", help="check the reference logic on CPU")
    a = ap.parse_args(argv)
    if a.selftest:
        return selftest()
    peers = tuple(p for p in a.peers.split(",") if p)
    info = env_info()
    print(info, flush=True)
    roof, empty = copy_roof(a.roof_mb, a.reps), empty_kernel(2 * a.reps)
    print(f"device copy {roof['gbps']:.0f} GB/s ({roof['size_bytes'] / 1e6:.0f} MB); "
          f"empty kernel {empty['us']:.2f} us alone, {empty['us_batched']:.2f} us batched", flush=True)
    results = []
    for c in C.selected(a):
        res = run_case(c, peers, a.reps, a.seed)
        results.append({"id": c.id, "peers": res})
        print(f"{c.id}: " + ", ".join(
            f"{p} {r['us']:.1f} us{'' if r['ok'] else ' MISMATCH'}" if "us" in r else f"{p} ERROR"
            for p, r in res.items()), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"env": info, "copy": roof, "empty": empty, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
