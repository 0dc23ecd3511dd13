"""The reductions benchmark's cases (issue 19): softmax and the norms as kfuse graphs.

Each case is one function over a row-major [M, N] activation, reduced over its last axis,
written as a .kf graph of primitives the way the composites spell them:

  softmax      m = amax(x); d = x - m; e = exp(d); s = sum(e); y = e / s
  log_softmax  m = amax(x); d = x - m; e = exp(d); s = sum(e); y = d - log(s)
  rmsnorm      Hugging Face's LlamaRMSNorm: h = x.to(f32); r = rsqrt(mean(h*h) + 1e-6);
               y = w * (h * r).to(x.dtype), w an input of x's dtype [N]
  layernorm    h = x.to(f32); mu = mean(h); d = h - mu; y = d * rsqrt(mean(d*d) + 1e-5)
               * w.to(f32) + b.to(f32), cast back; w, b inputs of x's dtype [N]
  add_rmsnorm  h = x + res (stored in x's dtype, an output), then rmsnorm(h): outputs h, y

(every reduction `axes=[-1], keepdims=true`), op for op and operand for operand as the
builder's composites expand them (ir/Composites.cpp: softmax, log_softmax, rms_norm,
layer_norm): softmax and log_softmax work in x's own dtype (no casts: a fused kernel
computes in f32 anyway), rms_norm and layer_norm cast a 16-bit x to f32 and the result
back (layer_norm casts w and b too); an f32 x has no casts.

Shapes: M x N in 4096 x 4096, 16384 x 8192, 4096 x 131072, 65536 x 1024 (the "large" set,
timed against the device copy) and 1 x 4096, 128 x 4096 (the "small" set, timed against an
empty kernel); dtypes bf16 and f32.

    python3 bench/reductions/cases.py --list
    python3 bench/reductions/cases.py --out DIR [--cases softmax --dtypes bf16 --shapes small]
    python3 bench/reductions/cases.py --verify build/bin/kfuse
        # every case at its real size: `kfuse opt`; at small sizes: `kfuse opt` and
        # `kfuse run --cpu` on fixed inputs, its outputs against a float64 Python reference
"""
from __future__ import annotations

import argparse
import array
import math
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

KINDS = ("softmax", "log_softmax", "rmsnorm", "layernorm", "add_rmsnorm")
DTYPES = ("bf16", "f32")
LARGE = ((4096, 4096), (16384, 8192), (4096, 131072), (65536, 1024))
SMALL = ((1, 4096), (128, 4096))
ESIZE = {"bf16": 2, "f16": 2, "f32": 4}
RMS_EPS = 1e-6   # LlamaRMSNorm's rms_norm_eps
LN_EPS = 1e-5    # nn.LayerNorm / F.layer_norm's default
RED = "axes=[-1], keepdims=true"


@dataclass(frozen=True)
class Case:
    kind: str
    dtype: str
    M: int
    N: int

    @property
    def id(self) -> str:
        return f"{self.kind}_{self.dtype}_{self.M}x{self.N}"

    @property
    def shape(self) -> str:
        return f"{self.M}x{self.N}"

    @property
    def small(self) -> bool:
        return (self.M, self.N) in SMALL

    def inputs(self) -> list[tuple[str, tuple[int, ...]]]:
        """(name, shape) of each graph input, in the .kf file's order."""
        x = (self.M, self.N)
        return {"softmax": [("x", x)], "log_softmax": [("x", x)],
                "rmsnorm": [("x", x), ("w", (self.N,))],
                "layernorm": [("x", x), ("w", (self.N,)), ("b", (self.N,))],
                "add_rmsnorm": [("x", x), ("res", x), ("w", (self.N,))]}[self.kind]

    def outputs(self) -> list[str]:
        return ["h", "y"] if self.kind == "add_rmsnorm" else ["y"]

    @property
    def must_move(self) -> int:
        """Bytes that must move: every input read once, every output written once."""
        es = ESIZE[self.dtype]
        ins = sum(math.prod(s) for _, s in self.inputs())
        return es * (ins + len(self.outputs()) * self.M * self.N)


def cases(kinds=None, dtypes=None, shapes=None) -> list[Case]:
    """The selected cases, bf16 first, then by kind and shape (large shapes, then small).
    `shapes`: "MxN" strings, or "large" / "small"; any shape given is allowed."""
    want: list[tuple[int, int]] = []
    for s in shapes or ("large", "small"):
        if s == "large":
            want += LARGE
        elif s == "small":
            want += SMALL
        else:
            m, _, n = s.lower().partition("x")
            if not (m.isdigit() and n.isdigit()):
                raise SystemExit(f"bad shape '{s}' (MxN, large or small)")
            want.append((int(m), int(n)))
    for k in kinds or ():
        if k not in KINDS:
            raise SystemExit(f"unknown case '{k}' (known: {', '.join(KINDS)})")
    for d in dtypes or ():
        if d not in ESIZE:
            raise SystemExit(f"unknown dtype '{d}' (known: {', '.join(ESIZE)})")
    want = list(dict.fromkeys(want))
    return [Case(k, d, m, n) for d in (dtypes or DTYPES) for k in (kinds or KINDS)
            for m, n in want]


# --- the .kf text ----------------------------------------------------------------------------

def _rms(src: str, c: Case, cast_name: str) -> list[str]:
    """LlamaRMSNorm of %src into %y (its f32 copy named cast_name for 16-bit dtypes)."""
    wide = c.dtype != "f32"
    h = cast_name if wide else src
    out = [f"%{h} = cast %{src}, to=f32"] if wide else []
    out += [f"%sq = mul %{h}, %{h}",
            f"%ms = mean %sq, {RED}",
            f"%v = add %ms, {RMS_EPS!r}",
            "%r = rsqrt %v",
            f"%n = mul %{h}, %r"]
    # the composite's `w * y`: w is the first operand
    out += [f"%c = cast %n, to={c.dtype}", "%y = mul %w, %c"] if wide else ["%y = mul %w, %n"]
    return out


def body(c: Case) -> list[str]:
    """The ops of case c (after its inputs), ending with its outputs' definitions."""
    wide = c.dtype != "f32"
    if c.kind == "rmsnorm":
        return _rms("x", c, "h")
    if c.kind == "add_rmsnorm":
        return ["%h = add %x, %res"] + _rms("h", c, "hf")
    if c.kind in ("softmax", "log_softmax"):  # in x's dtype, as the composites
        ops = [f"%m = amax %x, {RED}",
               "%d = sub %x, %m",
               "%e = exp %d",
               f"%s = sum %e, {RED}"]
        return ops + (["%y = div %e, %s"] if c.kind == "softmax" else
                      ["%l = log %s", "%y = sub %d, %l"])
    h = "h" if wide else "x"
    ops = ["%h = cast %x, to=f32"] if wide else []
    if c.kind == "layernorm":
        ops += [f"%mu = mean %{h}, {RED}",
                f"%d = sub %{h}, %mu",
                "%sq = mul %d, %d",
                f"%var = mean %sq, {RED}",
                f"%v = add %var, {LN_EPS!r}",
                "%r = rsqrt %v",
                "%n = mul %d, %r"]
        if wide:
            return ops + ["%wf = cast %w, to=f32", "%nw = mul %n, %wf",
                          "%bf = cast %b, to=f32", "%p = add %nw, %bf",
                          f"%y = cast %p, to={c.dtype}"]
        return ops + ["%nw = mul %n, %w", "%y = add %nw, %b"]
    raise ValueError(c.kind)


def kf_text(c: Case) -> str:
    lines = [f"# {c.kind}, {c.dtype} [{c.M}, {c.N}], reduced over the last axis "
             f"(bench/reductions/cases.py; must move {c.must_move} bytes)",
             f"graph {c.id} {{"]
    lines += [f"  %{n} = input {c.dtype}[{', '.join(map(str, s))}]" for n, s in c.inputs()]
    lines += [f"  {op}" for op in body(c)]
    lines += [f"  output {', '.join('%' + o for o in c.outputs())}", "}"]
    return "\n".join(lines) + "\n"


def write_kf(c: Case, outdir: str | os.PathLike) -> Path:
    p = Path(outdir) / f"{c.id}.kf"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(kf_text(c))
    return p


def write_all(cs: list[Case], outdir: str | os.PathLike) -> dict[str, Path]:
    """One .kf file per case into outdir; returns {case id: path}."""
    return {c.id: write_kf(c, outdir) for c in cs}


def describe(c: Case) -> dict:
    return dict(id=c.id, kind=c.kind, dtype=c.dtype, M=c.M, N=c.N, small=c.small,
                must_move=c.must_move, inputs=[n for n, _ in c.inputs()], outputs=c.outputs())


# Two graphs run.py times with kfuse itself: a 1-element op (kfuse's own launch floor) and an
# f32 op over 256 MB, whose `--bench` copy row is a device copy of 256 MB (512 MB moved).
FLOOR_KF = "graph floor {\n  %x = input f32[1]\n  %y = neg %x\n  output %y\n}\n"
ROOF_KF = "graph roof {\n  %x = input f32[67108864]\n  %y = neg %x\n  output %y\n}\n"


# --- local verification: kfuse opt and run --cpu against a float64 reference -----------------

def _npy_write(path: Path, shape: tuple[int, ...], vals: list[float]) -> None:
    """A little-endian f32 .npy file (no numpy needed)."""
    hdr = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({', '.join(map(str, shape))},), }}"
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    a = array.array("f", vals)
    if sys.byteorder != "little":
        a.byteswap()
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(hdr).to_bytes(2, "little") + hdr.encode() + a.tobytes())


def _npy_read(path: Path) -> list[float]:
    raw = path.read_bytes()
    n = int.from_bytes(raw[8:10], "little")
    hdr = raw[10:10 + n].decode()
    if "'<f4'" not in hdr:
        raise ValueError(f"{path}: not little-endian f32: {hdr}")
    a = array.array("f")
    a.frombytes(raw[10 + n:])
    if sys.byteorder != "little":
        a.byteswap()
    return list(a)


def reference(c: Case, ins: dict[str, list[float]]) -> dict[str, list[float]]:
    """The case's function in float64 Python, row by row (no intermediate rounding)."""
    M, N = c.M, c.N
    x = ins["x"]
    if c.kind == "add_rmsnorm":
        x = [a + b for a, b in zip(x, ins["res"])]
    out: list[float] = []
    for i in range(M):
        row = x[i * N:(i + 1) * N]
        if c.kind in ("softmax", "log_softmax"):
            m = max(row)
            s = sum(math.exp(v - m) for v in row)
            out += [math.exp(v - m) / s for v in row] if c.kind == "softmax" else \
                [v - m - math.log(s) for v in row]
        elif c.kind in ("rmsnorm", "add_rmsnorm"):
            r = 1 / math.sqrt(sum(v * v for v in row) / N + RMS_EPS)
            out += [v * r * w for v, w in zip(row, ins["w"])]
        else:
            mu = sum(row) / N
            r = 1 / math.sqrt(sum((v - mu) ** 2 for v in row) / N + LN_EPS)
            out += [(v - mu) * r * w + b for v, w, b in zip(row, ins["w"], ins["b"])]
    return {"h": x, "y": out} if c.kind == "add_rmsnorm" else {"y": out}


def close(got: list[float], ref: list[float], dtype: str) -> str:
    """"" when got matches ref within the dtype's tolerance (as ir/Compare.h), else why."""
    elem, norm = {"f32": (1e-5, 1e-6), "f16": (4e-3, 1e-3), "bf16": (3e-2, 1e-2)}[dtype]
    if len(got) != len(ref):
        return f"{len(got)} values, expected {len(ref)}"
    bad = [i for i, (g, r) in enumerate(zip(got, ref)) if not abs(g - r) <= elem * (1 + abs(r))]
    d = math.sqrt(sum((g - r) ** 2 for g, r in zip(got, ref)))
    rel = d / max(math.sqrt(sum(r * r for r in ref)), 1e-30)
    if bad or rel > norm:
        i = bad[0] if bad else 0
        return f"rel {rel:.2e} (max {norm}), {len(bad)} elements out, e.g. [{i}] {got[i]} vs {ref[i]}"
    return ""


def verify(kfuse: str, cs: list[Case], small_shapes=((3, 37), (1, 64), (2, 1000))) -> int:
    """`kfuse opt` on every case's file; `kfuse opt` + `run --cpu` of each kind and dtype at
    small shapes on inputs exactly representable in bf16, against reference(). Returns the
    number of failures (and prints one line per check)."""
    failures = 0
    rng = random.Random(19)
    with tempfile.TemporaryDirectory() as tmp:
        for c in cs:
            p = write_kf(c, tmp)
            r = subprocess.run([kfuse, "opt", str(p)], capture_output=True, text=True)
            ok = r.returncode == 0
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} opt {c.id}" + ("" if ok else f": {r.stderr.strip()}"))
        kinds = list(dict.fromkeys((c.kind, c.dtype) for c in cs))
        for kind, dt in kinds:
            for M, N in small_shapes:
                c = Case(kind, dt, M, N)
                d = Path(tmp) / c.id
                (d / "in").mkdir(parents=True)
                ins = {}
                for name, shape in c.inputs():
                    # k/64 with |k| <= 128: exact in bf16, f16 and f32; never 0
                    ins[name] = [rng.choice((-1, 1)) * rng.randint(1, 128) / 64
                                 for _ in range(math.prod(shape))]
                    if name == "x" and kind in ("softmax", "log_softmax"):
                        ins[name] = [4 * v for v in ins[name]]  # a wider range for exp
                    _npy_write(d / "in" / f"{name}.npy", shape, ins[name])
                p = write_kf(c, d)
                r = subprocess.run([kfuse, "opt", "-O2", str(p)], capture_output=True, text=True)
                why = "" if r.returncode == 0 else f"opt -O2: {r.stderr.strip()}"
                if not why:
                    r = subprocess.run([kfuse, "run", "--cpu", str(p), "--inputs", str(d / "in"),
                                        "--outputs", str(d / "out")], capture_output=True, text=True)
                    why = "" if r.returncode == 0 else f"run --cpu: {r.stderr.strip()}"
                if not why:
                    ref = reference(c, ins)
                    why = "; ".join(f"{o}: {e}" for o in c.outputs()
                                    if (e := close(_npy_read(d / "out" / f"{o}.npy"), ref[o], dt)))
                failures += bool(why)
                print(f"{'FAIL' if why else 'ok  '} run --cpu vs float64 {c.id}" +
                      (f": {why}" if why else ""))
    return failures


def _csv(s: str | None) -> list[str]:
    return [x.strip() for x in (s or "").split(",") if x.strip()]


def add_selection_args(ap: argparse.ArgumentParser) -> None:
    env = os.environ.get
    ap.add_argument("--cases", default=env("RED_CASES", ""),
                    help=f"comma list of {','.join(KINDS)} (env RED_CASES; default all)")
    ap.add_argument("--dtypes", default=env("RED_DTYPES", ""),
                    help="comma list of bf16,f32 (env RED_DTYPES; default both)")
    ap.add_argument("--shapes", default=env("RED_SHAPES", ""),
                    help="comma list of MxN, 'large', 'small' (env RED_SHAPES; default large,small)")


def selected(a: argparse.Namespace) -> list[Case]:
    return cases(_csv(a.cases), _csv(a.dtypes), _csv(a.shapes))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="the reductions benchmark's cases as .kf files")
    add_selection_args(ap)
    ap.add_argument("--list", action="store_true", help="print the cases and their bytes")
    ap.add_argument("--out", help="write the .kf files into this folder")
    ap.add_argument("--verify", metavar="KFUSE", help="check the files with this kfuse binary")
    a = ap.parse_args(argv)
    cs = selected(a)
    if a.list or not (a.out or a.verify):
        for c in cs:
            print(f"{c.id:32} inputs {','.join(n for n, _ in c.inputs()):10} "
                  f"outputs {','.join(c.outputs()):4} must move {c.must_move / 1e6:10.3f} MB")
    if a.out:
        for c, p in zip(cs, write_all(cs, a.out).values()):
            print(p)
    if a.verify:
        n = verify(a.verify, cs)
        print(f"{n} failure(s)")
        return 1 if n else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
