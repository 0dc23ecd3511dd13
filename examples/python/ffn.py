"""A feed-forward block (Llama's SwiGLU MLP) compiled with torch.compile(backend="kfuse"),
checked against eager, timed against eager and the default backend (Inductor), with the
fusion summary. On a machine without a GPU it runs a small block on kfuse's reference
interpreter (a check of the mapping, not a speed) and skips the timing.

    PYTHONPATH=python python3 examples/python/ffn.py [--tokens 256] [--hidden 4096]
"""

import argparse
import time

import torch

import kfuse.torch  # noqa: F401 (registers backend="kfuse")


class FeedForward(torch.nn.Module):
    def __init__(self, hidden, inner):
        super().__init__()
        self.gate = torch.nn.Linear(hidden, inner, bias=False)
        self.up = torch.nn.Linear(hidden, inner, bias=False)
        self.down = torch.nn.Linear(inner, hidden, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


def bench(fn, x, reps=50):
    """Median microseconds per call, the calls replayed from one CUDA graph."""
    for _ in range(3):
        fn(x)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn(x)
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return sorted(times)[len(times) // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=256)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--inner", type=int, default=14336)
    args = p.parse_args()
    cuda = torch.cuda.is_available()
    if not cuda:
        args.tokens, args.hidden, args.inner = 8, 64, 128
    dev, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float32)
    torch.manual_seed(0)
    model = FeedForward(args.hidden, args.inner).to(dev, dtype).eval()
    x = torch.randn(1, args.tokens, args.hidden, device=dev, dtype=dtype)
    with torch.inference_mode():
        ref = model(x)
        t0 = time.time()
        compiled = torch.compile(model, backend="kfuse", dynamic=False)
        y = compiled(x)
        print(f"kfuse: compiled and ran in {time.time() - t0:.1f} s, max |y - eager| = "
              f"{(y.float() - ref.float()).abs().max().item():.3g}")
        print(kfuse.torch.summary(report=True))
        if not cuda:
            print("no GPU: the block ran on kfuse's reference interpreter; timing skipped")
            return
        times = {"eager": bench(model, x), "kfuse": bench(compiled, x)}
        torch._dynamo.reset()
        times["inductor"] = bench(torch.compile(model, dynamic=False), x)
    for k, v in times.items():
        print(f"{k:9s} {v:9.1f} us")


if __name__ == "__main__":
    main()
