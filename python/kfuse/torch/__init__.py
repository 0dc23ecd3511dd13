"""The torch.compile backend "kfuse" (registered on import; also an entry point of the
package): torch.compile(model, backend="kfuse").

Dynamo's graph goes through aot_autograd (functionalization, aten ops); linear's views are
folded into matmuls; the nodes kfuse can run are partitioned (CapabilityBasedPartitioner),
each partition compiled by kfuse (cached per shapes and dtypes) and called on the caller's
stream with torch-allocated outputs; PyTorch runs the rest. Inference only: under autograd
(an input requiring grad while grad mode is on) the graph runs eagerly, with a warning.
summary() says which ops ran in kfuse kernels and which fell back, and why."""

import collections
import warnings

import torch
from torch._dynamo.backends.common import aot_autograd
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

import kfuse

from . import convert as _convert

__all__ = ["backend", "summary", "records", "reset", "Region", "compile_graph"]

_CACHE = {}
_RECORDS = []
_NON_COMPUTE = ["aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
                "aten.t.default", "aten.transpose.int", "aten.permute.default",
                "aten.clone.default", "aten.alias.default", "aten.detach.default",
                "aten.squeeze.dim", "aten.unsqueeze.default", "aten.expand.default",
                "_operator.getitem"]


class Record:
    """What the backend did with one graph: regions [(name, [op names], kernels, report)],
    fallbacks [(op, reason)], and note (why the whole graph ran in PyTorch, if it did)."""

    def __init__(self, name):
        self.name, self.regions, self.fallbacks, self.note = name, [], [], None

    def __str__(self):
        lines = [f"kfuse backend, {self.name}:"]
        if self.note:
            lines.append(f"  all of it in PyTorch: {self.note}")
        for name, ops, kernels, report in self.regions:
            counts = collections.Counter(ops)
            opstr = ", ".join(f"{k} x{v}" if v > 1 else k for k, v in counts.items())
            lines.append(f"  {name}: {len(ops)} ops in {kernels} kfuse kernels: {opstr}")
            if report is not None:
                lines.extend("    " + s for s in str(report).splitlines())
        for op, reason in self.fallbacks:
            lines.append(f"  PyTorch: {op}: {reason}")
        return "\n".join(lines)


def records():
    """[Record] of every graph compiled since the last reset()."""
    return list(_RECORDS)


def summary(report=False):
    """The text of every record: ops run in kfuse kernels, ops PyTorch ran and why."""
    out = []
    for r in _RECORDS:
        text = str(r)
        if not report:
            text = "\n".join(s for s in text.splitlines() if not s.startswith("    "))
        out.append(text)
    return "\n".join(out)


def reset():
    """Forgets the records and the compiled-module cache."""
    _RECORDS.clear()
    _CACHE.clear()


class _Support(OperatorSupport):
    def __init__(self, reasons):
        super().__init__()
        self.reasons = reasons

    def is_node_supported(self, submodules, node):
        return node.op == "call_function" and self.reasons.get(node, "x") is None


def _compiled(graph, cuda, options):
    """The kfuse module of graph, from the cache when the same graph (text: ops, shapes,
    dtypes) was compiled with the same options."""
    key = (graph.text(), cuda, tuple(sorted(options.items())))
    m = _CACHE.get(key)
    if m is None:
        if cuda:
            m = kfuse.compile(graph, arch=options.get("arch", "device"),
                              tf32=options.get("tf32", False),
                              fusion=options.get("fusion", True))
            m.executable()
        else:  # CPU tensors: the reference interpreter (a check, not a fast path)
            m = kfuse.compile(graph, arch="sm_90a", stage="plan",
                              fusion=options.get("fusion", True))
        _CACHE[key] = m
    return m


class Region(torch.nn.Module):
    """One partition run by kfuse: views its arguments as the kfuse inputs (no copies unless
    an argument is not contiguous) and returns the outputs in the partition's shapes."""

    def __init__(self, module, specs, out_shapes):
        super().__init__()
        self.module = module
        self.specs = [(s.index, s.shape) for s in specs]
        self.out_shapes = out_shapes
        self.reshape = [None] * len(out_shapes)
        for i, (shape, (_, _, kshape)) in enumerate(zip(out_shapes, module.outputs)):
            if tuple(shape) != tuple(kshape):
                self.reshape[i] = shape

    def forward(self, *args):
        ts = []
        for i, shape in self.specs:
            t = args[i]
            if not t.is_contiguous():
                t = t.contiguous()
            ts.append(t if shape is None else t.view(shape))
        outs = self.module(*ts)
        if not isinstance(outs, tuple):
            outs = (outs,)
        outs = [o if s is None else o.view(s) for o, s in zip(outs, self.reshape)]
        return outs[0] if len(outs) == 1 else tuple(outs)


def _ops_of(gm):
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"
            and _convert.opname(n) not in ("getitem",)]


def compile_graph(gm, example_inputs, options=None, name="graph"):
    """Partitions aten graph gm, compiles each partition with kfuse and puts a Region in its
    place. Returns (gm, Record). Works on CPU inputs too (kfuse's reference interpreter)."""
    options = dict(options or {})
    rec = Record(name)
    _convert.fold_linear_views(gm)
    _convert.fold_layer_norm(gm)
    if gm.graph.eliminate_dead_code():  # unused getitems split partitions
        gm.recompile()
    reasons = _convert.support(gm)
    for node, why in reasons.items():
        if why is not None and _convert.opname(node) != "getitem":
            rec.fallbacks.append((str(node.target), why))
    part = CapabilityBasedPartitioner(gm, _Support(reasons), allows_single_node_partition=True,
                                      non_compute_ops=_NON_COMPUTE)
    partitions = part.propose_partitions()
    fused = part.fuse_partitions(partitions) if partitions else gm
    cuda = any(isinstance(t, torch.Tensor) and t.is_cuda for t in example_inputs)
    for node in list(fused.graph.nodes):
        if node.op != "call_module" or not node.target.startswith("fused_"):
            continue
        sub = getattr(fused, node.target)
        ops = _ops_of(sub)
        try:
            graph, specs, out_shapes = _convert.convert(sub, node.target)
            m = _compiled(graph, cuda, options)
        except (_convert.Unsupported, kfuse.KfuseError) as e:
            rec.fallbacks.extend((op, f"its region failed in kfuse: {e}") for op in ops)
            continue
        setattr(fused, node.target, Region(m, specs, out_shapes))
        report = m.report()
        rec.regions.append((node.target, ops, report.fused.get("launches"), report))
    fused.recompile()
    return fused, rec


def _autograd_requested(example_inputs):
    return torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in example_inputs)


def _bw_compiler(gm, example_inputs):
    raise RuntimeError("the kfuse backend is inference-only: it compiles no backward graph. "
                       "Run the model under torch.no_grad() or torch.inference_mode()")


def backend(gm, example_inputs, **options):
    """torch.compile's entry: backend="kfuse"; options=dict(tf32=..., fusion=...,
    arch=...) reach kfuse.compile."""
    name = f"graph{len(_RECORDS)}"
    if _autograd_requested(example_inputs):
        rec = Record(name)
        rec.note = ("autograd requested (an input requires grad under grad mode): kfuse is "
                    "inference-only; run under torch.no_grad() or torch.inference_mode()")
        _RECORDS.append(rec)
        warnings.warn("kfuse backend: " + rec.note + "; this graph runs eagerly")
        return gm.forward

    def fw(gm2, inputs):
        from functorch.compile import make_boxed_func
        fused, rec = compile_graph(gm2, inputs, options, name)
        _RECORDS.append(rec)
        return make_boxed_func(fused.forward)

    return aot_autograd(fw_compiler=fw, bw_compiler=_bw_compiler)(gm, example_inputs)


def _register():
    from torch._dynamo.backends.registry import _BACKENDS, register_backend
    if "kfuse" not in _BACKENDS:
        register_backend(name="kfuse")(backend)


_register()
