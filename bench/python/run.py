"""Issue 21 on the GPU: torch.compile(backend="kfuse") against eager and the default backend
(Inductor) on a transformers LlamaMLP and on a block of ours, bf16, static shapes; each
timed in a CUDA graph (median of many replays), torch._dynamo.reset() between; then the
per-call host cost of the Python path (kfuse.Module(*tensors)). Writes python.json and
python.md under $OUT (default ./device-logs).

    KFUSE_LIBRARY=.devcarry/bin/libkfuse.so.0.1 python3 bench/python/run.py
"""

import json
import os
import statistics
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
import kfuse  # noqa: E402
import kfuse.torch as kt  # noqa: E402

OUT = os.environ.get("OUT", "./device-logs")
REPS, INNER = int(os.environ.get("PY_REPS", "30")), int(os.environ.get("PY_INNER", "20"))


class GeluBlock(torch.nn.Module):
    """Ours: pre-norm (RMSNorm, Hugging Face's spelling), up + bias, gelu_tanh, down + bias,
    residual."""

    def __init__(self, h, i):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(h))
        self.up = torch.nn.Linear(h, i)
        self.down = torch.nn.Linear(i, h)

    def forward(self, x):
        v = x.float().pow(2).mean(-1, keepdim=True)
        n = self.w * (x.float() * torch.rsqrt(v + 1e-6)).to(x.dtype)
        return x + self.down(torch.nn.functional.gelu(self.up(n), approximate="tanh"))


def llama_mlp(h, i):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaMLP
    return LlamaMLP(LlamaConfig(hidden_size=h, intermediate_size=i, hidden_act="silu"))


def time_fn(fn, x):
    """Median microseconds per call: in a CUDA graph when fn captures, else plain calls."""
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    graphed = True
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn(x)
        run = g.replay
        run()
    except Exception as e:  # noqa: BLE001 (any capture failure: time it plainly)
        print(f"  no CUDA graph: {type(e).__name__}: {str(e)[:200]}")
        graphed, run = False, (lambda: fn(x))
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(INNER):
            run()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / INNER)
    return statistics.median(times), graphed


def case(name, model, x):
    model = model.to("cuda", torch.bfloat16).eval()
    res = {"case": name, "x": list(x.shape)}
    with torch.no_grad():
        ref = model(x)
        res["eager_us"], res["eager_graph"] = time_fn(model, x)
        for backend in ("kfuse", "inductor"):
            torch._dynamo.reset()
            kt.reset()
            t0 = time.time()
            c = torch.compile(model, backend=backend, dynamic=False)
            y = c(x)
            torch.cuda.synchronize()
            res[f"{backend}_compile_s"] = round(time.time() - t0, 2)
            err = (y.float() - ref.float()).abs().max().item()
            res[f"{backend}_max_abs_err"] = err
            res[f"{backend}_ok"] = bool(torch.allclose(y.float(), ref.float(),
                                                       atol=3e-2, rtol=3e-2))
            res[f"{backend}_us"], res[f"{backend}_graph"] = time_fn(c, x)
            if backend == "kfuse":
                res["summary"] = kt.summary(report=True)
                print(res["summary"])
    print({k: v for k, v in res.items() if k != "summary"})
    return res


def host_overhead():
    """Per-call CPU time of m(*tensors) on a one-kernel graph (tiny: the GPU never limits),
    beside its parts: the bare ctypes launch with prebuilt pointer arrays, and torch.empty."""
    g = kfuse.Graph("tiny")
    x = g.input("x", "bf16", [256])
    g.output(kfuse.relu(x))
    m = kfuse.compile(g)
    t = torch.randn(256, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(t)
    n = 20000

    def per_call(f):
        for _ in range(200):
            f()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        dt = time.perf_counter() - t0
        torch.cuda.synchronize()
        return dt / n * 1e6

    import ctypes
    L, exe = kfuse._lib.lib(), m.executable()
    ip = (ctypes.c_void_p * 1)(t.data_ptr())
    op = (ctypes.c_void_p * 1)(out.data_ptr())
    stream = torch.cuda.current_stream().cuda_stream
    r = {"module_call_us": per_call(lambda: m(t)),
         "module_call_out_us": per_call(lambda: m(t, out=[out])),
         "bare_ctypes_launch_us": per_call(
             lambda: L.kfuse_executable_launch(exe, ip, 1, op, 1, stream)),
         "torch_empty_us": per_call(lambda: torch.empty(256, device="cuda", dtype=torch.bfloat16)),
         "torch_relu_us": per_call(lambda: torch.relu(t))}

    def f(a):
        return torch.relu(a)
    torch._dynamo.reset()
    c = torch.compile(f, backend="kfuse", dynamic=False)
    with torch.no_grad():
        r["backend_call_us"] = per_call(lambda: c(t))
    print(r)
    return r


def write(info):
    """python.json and python.md under OUT, from what was measured so far."""
    with open(os.path.join(OUT, "python.json"), "w") as f:
        json.dump(info, f, indent=1)
    lines = ["| case | eager us | kfuse us | inductor us | kfuse/eager | kfuse/inductor | "
             "kfuse ok | kfuse err | compile s (kfuse, inductor) |", "|---" * 9 + "|"]
    for c in info["cases"]:
        lines.append(f"| {c['case']} | {c['eager_us']:.1f} | {c['kfuse_us']:.1f} | "
                     f"{c['inductor_us']:.1f} | {c['kfuse_us'] / c['eager_us']:.2f} | "
                     f"{c['kfuse_us'] / c['inductor_us']:.2f} | {c['kfuse_ok']} | "
                     f"{c['kfuse_max_abs_err']:.3g} | {c['kfuse_compile_s']}, "
                     f"{c['inductor_compile_s']} |")
    lines.append("")
    lines.append("host, us per call: " +
                 ", ".join(f"{k} {v:.2f}" for k, v in info.get("host", {}).items()))
    with open(os.path.join(OUT, "python.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def main():
    os.makedirs(OUT, exist_ok=True)
    name, cc, sms = kfuse.device()
    info = {"device": name, "cc": cc, "sms": sms, "torch": torch.__version__,
            "python": sys.version.split()[0], "kfuse": kfuse.library_version()[0],
            "cases": []}
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except ImportError:
        pass
    print(info)
    info["host"] = host_overhead()  # first: the cheapest and the one with a target
    write(info)
    torch.manual_seed(0)
    t0, budget = time.time(), float(os.environ.get("PY_BUDGET", "170"))
    models = [("LlamaMLP 4096x14336", lambda: llama_mlp(4096, 14336)),
              ("GeluBlock 4096x11008", lambda: GeluBlock(4096, 11008))]
    for tokens in [int(t) for t in os.environ.get("PY_TOKENS", "64,1024").split(",")]:
        x = torch.randn(1, tokens, 4096, device="cuda", dtype=torch.bfloat16)
        for label, make in models:
            if time.time() - t0 > budget:
                print(f"PY_BUDGET {budget:.0f} s spent: {label}, {tokens} tokens not measured")
                continue
            try:
                info["cases"].append(case(f"{label}, {tokens} tokens", make(), x))
            except ImportError as e:
                print(f"{label}: {e}")
            write(info)
    print("\n".join(write(info)))


if __name__ == "__main__":
    main()
