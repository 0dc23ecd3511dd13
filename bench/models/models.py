"""Real models' layers as kfuse graphs (issue 17): the shapes, the cases, the .kf writer.

Every shape below is read from the model's published Hugging Face config.json (the repo is
named next to each model), and every computation is spelled the way the model's
`transformers` module spells it, with the weights laid out as the model stores them:

  - nn.Linear keeps W as [out, in] = [N, K] and computes x W^T (+ b): `matmul trans_b=true`.
  - GPT-2's Conv1D keeps W as [in, out] = [K, N] and computes torch.addmm(b, x, W):
    `matmul` (no transpose) then `add` (the .kf language has no addmm: the bias is an
    elementwise add that kfuse fuses into the GEMM's epilogue).

Cases: each linear layer alone in the variants `bare` (x W), `bias` (+ b, where the model
has a bias) and `act` (the activation the model applies to that layer's output, where it
applies one), and each model's feed-forward block (`mlp`), at T = 1, 16, 128, 1024, 4096
tokens; all bf16. Layers of one model with the same shape and spelling are one case (the
table names the others as `also`).

    python3 bench/models/models.py --list                      # the cases, FLOPs, weight bytes
    python3 bench/models/models.py --out DIR --T 16            # write the .kf files
    python3 bench/models/models.py --out DIR --T 16 --verify build/bin/kfuse
                                            # ... and `kfuse compile` + `kfuse report` each
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TOKENS = (1, 16, 128, 1024, 4096)
BF16_BYTES = 2
GELU_NEW_C = math.sqrt(2.0 / math.pi)  # NewGELUActivation's math.sqrt(2.0 / math.pi)


@dataclass(frozen=True)
class Linear:
    name: str                 # the transformers module name, e.g. "mlp.gate_proj"
    K: int                    # in_features
    N: int                    # out_features
    layout: str = "linear"    # "linear": nn.Linear, W [N, K]; "conv1d": GPT-2 Conv1D, W [K, N]
    bias: bool = False        # the model's layer has a bias
    act: str | None = None    # the activation the model applies to this layer's output
    also: tuple[str, ...] = ()  # other modules of the model with this shape and spelling

    def variants(self) -> list[str]:
        return ["bare"] + (["bias"] if self.bias else []) + (["act"] if self.act else [])


@dataclass(frozen=True)
class Block:
    kind: str      # "swiglu" (Llama/Qwen2), "geglu" (Gemma), "gpt2_mlp" (GPT-2)
    hidden: int
    inter: int

    @property
    def act(self) -> str:
        return {"swiglu": "silu", "geglu": "gelu_tanh", "gpt2_mlp": "gelu_new"}[self.kind]

    def matmuls(self) -> list[tuple[str, int, int]]:
        """(weight name, K, N) of every GEMM, in the order the block runs them."""
        H, I = self.hidden, self.inter
        if self.kind == "gpt2_mlp":
            return [("w_fc", H, I), ("w_proj", I, H)]
        return [("w_gate", H, I), ("w_up", H, I), ("w_down", I, H)]


@dataclass(frozen=True)
class Model:
    key: str
    title: str
    source: str                         # the Hugging Face repo whose config.json is cited
    linears: tuple[Linear, ...]
    block: Block
    notes: str = ""


# --- Llama-3-8B -----------------------------------------------------------------------
# meta-llama/Meta-Llama-3-8B config.json: hidden_size 4096, intermediate_size 14336,
# num_attention_heads 32, num_key_value_heads 8 (head_dim 4096/32 = 128), vocab_size 128256,
# hidden_act "silu", no attention or MLP bias (LlamaConfig attention_bias/mlp_bias = false),
# tie_word_embeddings false. LlamaMLP: down_proj(act_fn(gate_proj(x)) * up_proj(x)).
LLAMA3_8B = Model(
    "llama3_8b", "Llama-3-8B", "meta-llama/Meta-Llama-3-8B",
    linears=(
        Linear("q_proj", 4096, 32 * 128, also=("o_proj",)),
        Linear("k_proj", 4096, 8 * 128, also=("v_proj",)),
        Linear("gate_proj", 4096, 14336, act="silu", also=("up_proj (bare)",)),
        Linear("down_proj", 14336, 4096),
        Linear("lm_head", 4096, 128256),
    ),
    block=Block("swiglu", 4096, 14336))

# --- Qwen2-7B -------------------------------------------------------------------------
# Qwen/Qwen2-7B config.json: hidden_size 3584, intermediate_size 18944, num_attention_heads
# 28, num_key_value_heads 4 (head_dim 3584/28 = 128), vocab_size 152064, hidden_act "silu",
# tie_word_embeddings false. Qwen2Attention: q_proj, k_proj, v_proj have bias=True, o_proj
# bias=False; Qwen2MLP is Llama's SwiGLU without bias.
QWEN2_7B = Model(
    "qwen2_7b", "Qwen2-7B", "Qwen/Qwen2-7B",
    linears=(
        Linear("q_proj", 3584, 28 * 128, bias=True, also=("o_proj (bare)",)),
        Linear("k_proj", 3584, 4 * 128, bias=True, also=("v_proj",)),
        Linear("gate_proj", 3584, 18944, act="silu", also=("up_proj (bare)",)),
        Linear("down_proj", 18944, 3584),
        Linear("lm_head", 3584, 152064),
    ),
    block=Block("swiglu", 3584, 18944))

# --- GPT-2-XL -------------------------------------------------------------------------
# openai-community/gpt2-xl config.json: n_embd 1600, n_head 25, n_layer 48, n_inner null
# (GPT2MLP then uses 4 * n_embd = 6400), activation_function "gelu_new", vocab_size 50257.
# Every projection is a Conv1D with bias, weight [nx, nf] = [K, N], forward
# torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight). lm_head is an nn.Linear
# without bias tied to wte ([50257, 1600]). GPT2MLP: c_proj(act(c_fc(x))) (dropout is the
# identity in eval), act = NewGELUActivation:
#   0.5 * x * (1.0 + tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
GPT2_XL = Model(
    "gpt2_xl", "GPT-2-XL", "openai-community/gpt2-xl",
    linears=(
        Linear("attn.c_attn", 1600, 3 * 1600, layout="conv1d", bias=True),
        Linear("attn.c_proj", 1600, 1600, layout="conv1d", bias=True),
        Linear("mlp.c_fc", 1600, 4 * 1600, layout="conv1d", bias=True, act="gelu_new"),
        Linear("mlp.c_proj", 4 * 1600, 1600, layout="conv1d", bias=True),
        Linear("lm_head", 1600, 50257),
    ),
    block=Block("gpt2_mlp", 1600, 4 * 1600),
    notes="Conv1D weights [K, N]; gelu_new written out with pow and tanh")

# --- Gemma-7B -------------------------------------------------------------------------
# google/gemma-7b config.json: hidden_size 3072, intermediate_size 24576,
# num_attention_heads 16, num_key_value_heads 16, head_dim 256, vocab_size 256000,
# hidden_act "gelu" / hidden_activation "gelu_pytorch_tanh" (transformers' GemmaMLP uses
# the tanh-approximate GELU, F.gelu(x, approximate="tanh")), no bias, lm_head tied to the
# embedding ([256000, 3072]). GemmaMLP: down_proj(act_fn(gate_proj(x)) * up_proj(x)).
GEMMA_7B = Model(
    "gemma_7b", "Gemma-7B", "google/gemma-7b",
    linears=(
        Linear("q_proj", 3072, 16 * 256, also=("k_proj", "v_proj")),
        Linear("o_proj", 16 * 256, 3072),
        Linear("gate_proj", 3072, 24576, act="gelu_tanh", also=("up_proj (bare)",)),
        Linear("down_proj", 24576, 3072),
        Linear("lm_head", 3072, 256000),
    ),
    block=Block("geglu", 3072, 24576))

# --- Llama-3-70B, one tensor-parallel shard at TP = 8 -----------------------------------
# meta-llama/Meta-Llama-3-70B config.json: hidden_size 8192, intermediate_size 28672,
# num_attention_heads 64, num_key_value_heads 8 (head_dim 128), vocab_size 128256. Megatron
# style TP = 8: q/k/v and gate/up split by output column (64/8 = 8 query heads, 8/8 = 1 kv
# head, 28672/8 = 3584 intermediate), o_proj and down_proj split by input row (their partial
# sums are all-reduced afterwards; the all-reduce is not part of this benchmark).
LLAMA3_70B_TP8 = Model(
    "llama3_70b_tp8", "Llama-3-70B TP=8 shard", "meta-llama/Meta-Llama-3-70B",
    linears=(
        Linear("q_proj", 8192, 64 * 128 // 8),
        Linear("k_proj", 8192, 8 * 128 // 8, also=("v_proj",)),
        Linear("o_proj", 64 * 128 // 8, 8192),
        Linear("gate_proj", 8192, 28672 // 8, act="silu", also=("up_proj (bare)",)),
        Linear("down_proj", 28672 // 8, 8192),
    ),
    block=Block("swiglu", 8192, 28672 // 8),
    notes="one shard of eight; the all-reduce after o_proj/down_proj is not included")

MODELS: dict[str, Model] = {m.key: m for m in
                            (LLAMA3_8B, QWEN2_7B, GPT2_XL, GEMMA_7B, LLAMA3_70B_TP8)}


@dataclass(frozen=True)
class Case:
    model: str
    layer: str          # module name ("mlp" for the block)
    variant: str        # bare | bias | act | swiglu | geglu | gelu_new
    T: int
    spec: Linear | Block = field(compare=False)

    @property
    def section(self) -> str:
        return "block" if isinstance(self.spec, Block) else "linear"

    @property
    def id(self) -> str:
        """Graph and file name: a .kf word ([A-Za-z_][A-Za-z0-9_.]*)."""
        return f"{self.model}__{self.layer.replace('.', '_')}__{self.variant}__t{self.T}"

    @property
    def label(self) -> str:
        return f"{self.model} {self.layer} {self.variant}"

    def gemms(self) -> list[tuple[int, int]]:
        """(K, N) of every GEMM of the case; M is T."""
        if isinstance(self.spec, Block):
            return [(k, n) for _, k, n in self.spec.matmuls()]
        return [(self.spec.K, self.spec.N)]

    @property
    def flops(self) -> int:
        """2 T K N per GEMM (the elementwise work is not counted)."""
        return sum(2 * self.T * k * n for k, n in self.gemms())

    @property
    def macs(self) -> int:
        """T K N summed over the GEMMs: the size that decides whether --check is affordable."""
        return sum(self.T * k * n for k, n in self.gemms())

    @property
    def weight_bytes(self) -> int:
        """Bytes of the weights (and biases) the case reads: what streams from HBM at small T."""
        s = self.spec
        if isinstance(s, Block):
            n = sum(k * nn for _, k, nn in s.matmuls())
            if s.kind == "gpt2_mlp":
                n += s.inter + s.hidden
            return BF16_BYTES * n
        return BF16_BYTES * (s.K * s.N + (s.N if self.variant != "bare" and s.bias else 0))

    @property
    def io_bytes(self) -> int:
        """Weights + the activation read + the output written: the unavoidable traffic."""
        k0 = self.gemms()[0][0]
        n_out = self.gemms()[-1][1]
        return self.weight_bytes + BF16_BYTES * self.T * (k0 + n_out)

    @property
    def also(self) -> tuple[str, ...]:
        """Other modules this case also measures; "NAME (bare)" counts for `bare` only."""
        if not isinstance(self.spec, Linear):
            return ()
        out = []
        for a in self.spec.also:
            if a.endswith(" (bare)"):
                if self.variant == "bare":
                    out.append(a[:-len(" (bare)")])
            else:
                out.append(a)
        return tuple(out)


def cases(models=None, tokens=None, sections=("linear", "block"), layers=None) -> list[Case]:
    """The cases of these models (keys; all by default) at these T, linears first."""
    keys = list(models) if models else list(MODELS)
    for k in keys:
        if k not in MODELS:
            raise SystemExit(f"unknown model '{k}' (known: {', '.join(MODELS)})")
    tokens = list(tokens) if tokens else list(TOKENS)
    out: list[Case] = []
    if "linear" in sections:
        for k in keys:
            for lin in MODELS[k].linears:
                if layers and lin.name not in layers:
                    continue
                for v in lin.variants():
                    out += [Case(k, lin.name, v, T, lin) for T in tokens]
    if "block" in sections:
        for k in keys:
            b = MODELS[k].block
            if layers and "mlp" not in layers:
                continue
            variant = {"swiglu": "swiglu", "geglu": "geglu", "gpt2_mlp": "gelu_new"}[b.kind]
            out += [Case(k, "mlp", variant, T, b) for T in tokens]
    return out


# --- .kf text --------------------------------------------------------------------------

def _act_lines(act: str, src: str, dst: str) -> list[str]:
    """The activation `act` of %src into %dst, spelled as the model spells it."""
    if act == "silu":        # ACT2FN["silu"] = nn.SiLU: one op
        return [f"%{dst} = silu %{src}"]
    if act == "gelu_tanh":   # gelu_pytorch_tanh = F.gelu(approximate="tanh"): one op
        return [f"%{dst} = gelu_tanh %{src}"]
    if act == "gelu_new":
        # NewGELUActivation, op for op: 0.5 * x * (1.0 + tanh(c * (x + 0.044715 * pow(x, 3.0))))
        # The .kf language has `pow` (powf in kernels), so pow(x, 3.0) is written as the model
        # writes it, not as x*x*x. Literals are f32 constants; the PyTorch ops round each
        # intermediate to bf16, a kfuse kernel keeps them in f32 (it rounds where it stores).
        return [f"%{dst}.p3 = pow %{src}, 3.0",
                f"%{dst}.c = mul %{dst}.p3, 0.044715",
                f"%{dst}.s = add %{src}, %{dst}.c",
                f"%{dst}.u = mul %{dst}.s, {GELU_NEW_C!r}",
                f"%{dst}.t = tanh %{dst}.u",
                f"%{dst}.o = add %{dst}.t, 1.0",
                f"%{dst}.h = mul %{src}, 0.5",
                f"%{dst} = mul %{dst}.h, %{dst}.o"]
    raise ValueError(f"unknown activation {act}")


def _mm(dst: str, a: str, w: str, layout: str) -> str:
    return f"%{dst} = matmul %{a}, %{w}" + (", trans_b=true" if layout == "linear" else "")


def _w_decl(name: str, K: int, N: int, layout: str) -> str:
    shape = f"[{N}, {K}]" if layout == "linear" else f"[{K}, {N}]"
    return f"%{name} = input bf16{shape}"


def kf_text(c: Case) -> str:
    """The case as a .kf module of one graph named c.id."""
    m = MODELS[c.model]
    head = [f"# {m.title} ({m.source} config.json), {c.layer} {c.variant}, T = {c.T} tokens, bf16.",
            f"# {c.flops / 1e9:.4g} GFLOP, {c.weight_bytes / 1e6:.4g} MB of weights."
            " Written by bench/models/models.py.",
            f"graph {c.id} {{", f"  %x = input bf16[{c.T}, {c.gemms()[0][0]}]"]
    body: list[str] = []
    s = c.spec
    if isinstance(s, Linear):
        head.append("  " + _w_decl("w", s.K, s.N, s.layout))
        with_bias = s.bias and c.variant in ("bias", "act")
        if with_bias:
            head.append(f"  %b = input bf16[{s.N}]")
        body.append(_mm("h", "x", "w", s.layout))
        y = "h"
        if with_bias:  # nn.Linear's and Conv1D's addmm: the bias broadcast over the rows
            body.append("%hb = add %h, %b")
            y = "hb"
        if c.variant == "act":
            body += _act_lines(s.act, y, "y")
            y = "y"
    elif s.kind in ("swiglu", "geglu"):
        H, I = s.hidden, s.inter
        head += ["  " + _w_decl("w_gate", H, I, "linear"), "  " + _w_decl("w_up", H, I, "linear"),
                 "  " + _w_decl("w_down", I, H, "linear")]
        # down_proj(act_fn(gate_proj(x)) * up_proj(x))
        body += [_mm("gate", "x", "w_gate", "linear")]
        body += _act_lines(s.act, "gate", "a")
        body += [_mm("up", "x", "w_up", "linear"), "%p = mul %a, %up",
                 _mm("y", "p", "w_down", "linear")]
        y = "y"
    else:  # gpt2_mlp: c_proj(gelu_new(c_fc(x))) with Conv1D = addmm(b, x, W), W [K, N]
        H, I = s.hidden, s.inter
        head += ["  " + _w_decl("w_fc", H, I, "conv1d"), f"  %b_fc = input bf16[{I}]",
                 "  " + _w_decl("w_proj", I, H, "conv1d"), f"  %b_proj = input bf16[{H}]"]
        body += [_mm("fc", "x", "w_fc", "conv1d"), "%fcb = add %fc, %b_fc"]
        body += _act_lines("gelu_new", "fcb", "g")
        body += [_mm("proj", "g", "w_proj", "conv1d"), "%y = add %proj, %b_proj"]
        y = "y"
    return "\n".join(head + ["  " + line for line in body] + [f"  output %{y}", "}", ""])


def write_kf(c: Case, outdir: str | os.PathLike) -> Path:
    p = Path(outdir) / f"{c.id}.kf"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(kf_text(c))
    return p


def write_all(cs: list[Case], outdir: str | os.PathLike) -> dict[str, Path]:
    """One .kf file per case into outdir; returns {case id: path}."""
    return {c.id: write_kf(c, outdir) for c in cs}


def describe(cs: list[Case]) -> list[dict]:
    """The cases with their FLOPs and weight bytes, as plain dicts (for tables and JSON)."""
    return [dict(id=c.id, model=c.model, layer=c.layer, variant=c.variant, T=c.T,
                 section=c.section, gemms=c.gemms(), flops=c.flops, macs=c.macs,
                 weight_bytes=c.weight_bytes, io_bytes=c.io_bytes, also=list(c.also))
            for c in cs]


# --- shared command-line selection (run.py and peers.py use it too) -----------------------

def _csv(s: str | None) -> list[str]:
    return [x.strip() for x in (s or "").split(",") if x.strip()]


def add_selection_args(ap: argparse.ArgumentParser) -> None:
    env = os.environ.get
    ap.add_argument("--models", default=env("KFB_MODELS", ""),
                    help=f"comma list of {','.join(MODELS)} (env KFB_MODELS; default all)")
    ap.add_argument("--T", default=env("KFB_T", ""),
                    help="comma list of token counts (env KFB_T; default 1,16,128,1024,4096)")
    ap.add_argument("--layers", default=env("KFB_LAYERS", ""),
                    help="comma list of module names, e.g. lm_head,mlp.c_fc,mlp (the block)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--only-blocks", action="store_true", help="the feed-forward blocks only")
    g.add_argument("--only-linears", action="store_true", help="the linear layers only")


def selected_cases(args: argparse.Namespace) -> list[Case]:
    sections = ("block",) if args.only_blocks else ("linear",) if args.only_linears \
        else ("linear", "block")
    return cases(_csv(args.models), [int(t) for t in _csv(args.T)], sections,
                 _csv(args.layers) or None)


# --- local verification: kfuse compile + report of every written file -------------------

def verify(paths: list[Path], kfuse: str) -> int:
    """`kfuse compile --arch sm_90a` and `kfuse report` of each file, one at a time, with a
    throwaway kernel cache. Returns the number of failures."""
    failures = 0
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, KFUSE_CACHE_DIR=cache)
        for p in paths:
            for cmd in (["compile", "--arch", "sm_90a"], ["report", "--arch", "sm_90a"]):
                t0 = time.time()
                r = subprocess.run([kfuse, cmd[0], *cmd[1:], str(p)], capture_output=True,
                                   text=True, env=env)
                summary = ""
                if r.returncode == 0 and cmd[0] == "compile":
                    summary = r.stdout.splitlines()[0].split(":", 1)[-1].strip()
                elif r.returncode == 0:
                    tot = [" ".join(ln.split()) for ln in r.stdout.splitlines()
                           if ln.split()[:1] == ["fused"] and "launch" in ln]
                    summary = tot[0] if tot else ""
                else:
                    failures += 1
                    summary = "FAILED: " + (r.stderr.strip() or r.stdout.strip()).splitlines()[0]
                print(f"{p.name:48} {cmd[0]:8} rc={r.returncode} {time.time() - t0:5.2f}s "
                      f"{summary}", flush=True)
    return failures


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_selection_args(ap)
    ap.add_argument("--out", help="write one .kf file per case into this folder")
    ap.add_argument("--list", action="store_true", help="print the cases, FLOPs, weight bytes")
    ap.add_argument("--verify", metavar="KFUSE",
                    help="with --out: run KFUSE compile --arch sm_90a and report on each file")
    args = ap.parse_args(argv)
    cs = selected_cases(args)
    if args.list or not args.out:
        print(f"{'case':48} {'T':>5} {'GFLOP':>10} {'weight MB':>10}  also")
        for c in cs:
            print(f"{c.id:48} {c.T:5} {c.flops / 1e9:10.4g} {c.weight_bytes / 1e6:10.4g}  "
                  f"{', '.join(c.also)}")
        print(f"{len(cs)} cases")
    if args.out:
        paths = list(write_all(cs, args.out).values())
        print(f"wrote {len(paths)} .kf files to {args.out}", flush=True)
        if args.verify:
            bad = verify(paths, args.verify)
            print(f"verify: {len(paths)} files, {bad} failing commands")
            return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
