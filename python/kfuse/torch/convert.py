"""aten FX graphs -> kfuse graphs: which nodes kfuse can run (and why not), the view folding
that lets a Linear on [B, S, H] be one matmul, and the conversion of one partition."""

import operator

import torch

import kfuse

__all__ = ["fold_linear_views", "support", "convert", "Unsupported", "InputSpec"]

aten = torch.ops.aten
_DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}

UNARY = {"neg": "neg", "abs": "abs", "exp": "exp", "log": "log", "sqrt": "sqrt",
         "rsqrt": "rsqrt", "tanh": "tanh", "sigmoid": "sigmoid", "relu": "relu", "silu": "silu"}
BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "max",
          "minimum": "min", "pow": "pow"}
REDUCE = {"sum": "sum", "mean": "mean", "amax": "amax", "amin": "amin"}
MATMUL = {"mm", "bmm", "matmul", "addmm"}
VIEWS = {"view", "_unsafe_view", "reshape", "squeeze", "unsqueeze", "flatten", "expand"}
IDENTITY = {"clone", "alias", "detach", "lift_fresh_copy"}
TRANSPOSES = {"t", "transpose", "permute"}
CASTS = {"_to_copy", "convert_element_type"}
OTHER = {"gelu", "reciprocal", "rsub", "_softmax", "_log_softmax", "var_mean", "var",
         "native_layer_norm", "layer_norm"}


class Unsupported(Exception):
    """A node kfuse does not run; str() is the reason the summary prints."""


class Trans:
    """A kfuse value read transposed (the last two dims swapped): only a matmul operand."""

    def __init__(self, value):
        self.value = value


class InputSpec:
    """How a kfuse input is made from the partition's argument `index`: viewed as `shape`
    (None: as it is)."""

    def __init__(self, index, shape):
        self.index, self.shape = index, shape


def opname(node):
    """"add" for aten.add.Tensor, "getitem" for operator.getitem, None otherwise."""
    if node.op != "call_function":
        return None
    if node.target is operator.getitem:
        return "getitem"
    return getattr(node.target, "_opname", None)


def _val(x):
    return x.meta.get("val") if isinstance(x, torch.fx.Node) else None


def _static(v):
    return all(isinstance(d, int) for d in v.shape)


def _check_tensor(v, what):
    if not isinstance(v, torch.Tensor):
        raise Unsupported(f"{what} is not a tensor")
    if v.dtype not in _DTYPES:
        raise Unsupported(f"{what} is {v.dtype} (kfuse has f32, f16, bf16)")
    if not _static(v):
        raise Unsupported(f"{what} has a dynamic shape {tuple(v.shape)}")


def _node_reason(node):
    """Raises Unsupported(why) unless kfuse can compute node (its operands aside)."""
    name = opname(node)
    known = (set(UNARY) | set(BINARY) | set(REDUCE) | MATMUL | VIEWS | IDENTITY | TRANSPOSES
             | CASTS | OTHER | {"getitem"})
    if name not in known:
        raise Unsupported(f"{node.target} has no kfuse mapping" if node.op == "call_function"
                          else f"{node.op} node")
    out = _val(node)
    outs = out if isinstance(out, (tuple, list)) else [out]
    for i, v in enumerate(outs):
        if v is not None:
            _check_tensor(v, f"result {i}" if len(outs) > 1 else "the result")
    for i, a in enumerate(node.args):
        if isinstance(a, torch.fx.Node):
            _check_tensor(_val(a), f"operand {i}")
        elif isinstance(a, (list, tuple)) and any(isinstance(x, torch.fx.Node) for x in a):
            raise Unsupported("a list of tensors as an operand")
    kw = node.kwargs
    if name in ("add", "sub") and not isinstance(kw.get("alpha", 1), (int, float)):
        raise Unsupported("alpha is not a number")
    if name == "div" and kw.get("rounding_mode") is not None:
        raise Unsupported(f"div with rounding_mode={kw['rounding_mode']}")
    if name in CASTS:
        extra = {k for k, v in kw.items() if k not in ("dtype",) and v is not None
                 and not (k == "device" and v == _val(node.args[0]).device)
                 and not (k == "layout" and v == torch.strided)}
        if extra:
            raise Unsupported(f"a copy with {', '.join(sorted(extra))}")
    if name in ("_softmax", "_log_softmax") and node.args[2]:
        raise Unsupported("half_to_float=True")
    if name in ("native_layer_norm", "layer_norm"):
        if len(node.args[1]) != 1:
            raise Unsupported("layer norm over more than the last axis")
        if name == "native_layer_norm" and any(
                u.target is not operator.getitem or (u.args[1] != 0 and u.users)
                for u in node.users):
            raise Unsupported("layer norm's mean or rstd is used")
    if name == "transpose" and sorted(d % _val(node).dim() for d in node.args[1:3]) != \
            [_val(node).dim() - 2, _val(node).dim() - 1]:
        raise Unsupported("a transpose of other dims than the last two")
    if name == "permute":
        r = _val(node).dim()
        if r < 2 or [d % r for d in node.args[1]] != list(range(r - 2)) + [r - 1, r - 2]:
            raise Unsupported("a permutation other than swapping the last two dims")
    if name == "expand" and tuple(_val(node).shape) != tuple(_val(node.args[0]).shape):
        raise Unsupported("an expand that broadcasts")


def support(gm):
    """{node: None (kfuse runs it) or the reason it falls back} for every call_function node
    of gm. Views of values made inside kfuse must keep the shape (kfuse has no reshape op);
    views of the graph's inputs or of values PyTorch computes are free (done on the
    argument). A transpose is supported where every user is a supported matmul."""
    reasons = {}
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        try:
            _node_reason(node)
            name = opname(node)
            src = node.args[0] if node.args and isinstance(node.args[0], torch.fx.Node) else None
            if name in VIEWS and src is not None and reasons.get(src, "external") is None and \
                    tuple(_val(node).shape) != tuple(_val(src).shape):
                raise Unsupported("a reshape of a value computed in kfuse (kfuse has no "
                                  "reshape op)")
            if name == "getitem" and reasons.get(src, "x") is not None:
                raise Unsupported("an item of a result kfuse does not compute")
            reasons[node] = None
        except Unsupported as e:
            reasons[node] = str(e)
    for node in reversed(list(gm.graph.nodes)):
        if opname(node) in TRANSPOSES and reasons.get(node) is None:
            bad = [u for u in node.users if opname(u) not in MATMUL or reasons.get(u) is not None
                   or (opname(u) == "addmm" and u.args[0] is node)]
            if bad:
                reasons[node] = "a transpose not read by a kfuse matmul (kfuse has no " \
                                "transpose op; matmul reads operands transposed)"
    return reasons


def _is_leading_merge(src_shape, shape):
    """shape == [prod(src_shape[:-1]), src_shape[-1]] with rank(src) >= 3."""
    if len(src_shape) < 3 or len(shape) != 2 or shape[1] != src_shape[-1]:
        return False
    p = 1
    for d in src_shape[:-1]:
        p *= d
    return p == shape[0]


def fold_linear_views(gm):
    """view(x, [B*S, K]) -> mm/addmm -> view(., [B, S, N]) becomes matmul(x, w) (+ bias):
    nn.Linear on a 3-D input, as aot_autograd decomposes it, made one kfuse matmul (batch
    dims broadcast). The result is an aten graph PyTorch runs as well. Returns the number
    folded."""
    folded = 0
    for mm in list(gm.graph.nodes):
        name = opname(mm)
        if name not in ("mm", "addmm"):
            continue
        a = mm.args[0] if name == "mm" else mm.args[1]
        if opname(a) not in ("view", "_unsafe_view", "reshape") or mm.kwargs:
            continue
        x = a.args[0]
        xs, avs = tuple(_val(x).shape), tuple(_val(a).shape)
        if not _is_leading_merge(xs, avs) or not mm.users:
            continue
        want = xs[:-1] + (_val(mm).shape[-1],)
        if any(opname(u) not in ("view", "_unsafe_view", "reshape") or
               tuple(_val(u).shape) != want for u in mm.users):
            continue
        with gm.graph.inserting_after(mm):
            b = mm.args[1] if name == "mm" else mm.args[2]
            new = gm.graph.call_function(aten.matmul.default, (x, b))
            first = next(iter(mm.users))
            new.meta["val"] = _val(first)
            if name == "addmm":
                with gm.graph.inserting_after(new):
                    biased = gm.graph.call_function(aten.add.Tensor, (new, mm.args[0]))
                    biased.meta["val"] = _val(first)
                new = biased
        for u in list(mm.users):
            u.replace_all_uses_with(new)
            gm.graph.erase_node(u)
        gm.graph.erase_node(mm)
        if not a.users:
            gm.graph.erase_node(a)
        folded += 1
    if folded:
        gm.graph.lint()
        gm.recompile()
    return folded


def fold_layer_norm(gm):
    """getitem(native_layer_norm(...), 0), its mean and rstd unused, becomes
    aten.layer_norm (one result): a tuple's getitems would keep the partitioner from merging
    the norm with the ops that read it."""
    n = 0
    for node in list(gm.graph.nodes):
        if opname(node) != "native_layer_norm":
            continue
        items = list(node.users)
        if any(u.target is not operator.getitem for u in items) or \
                any(u.args[1] != 0 and u.users for u in items):
            continue
        with gm.graph.inserting_after(node):
            ln = gm.graph.call_function(aten.layer_norm.default, node.args)
        for u in items:
            if u.args[1] == 0:
                ln.meta["val"] = _val(u)
                u.replace_all_uses_with(ln)
            gm.graph.erase_node(u)
        gm.graph.erase_node(node)
        n += 1
    if n:
        gm.recompile()
    return n


def _dims(axes, rank):
    if axes is None or (isinstance(axes, (list, tuple)) and len(axes) == 0):
        return list(range(rank))
    return [axes] if isinstance(axes, int) else list(axes)


class _Converter:
    """Builds the kfuse graph of one partition (a GraphModule whose placeholders are the
    partition's inputs and whose output is its results)."""

    def __init__(self, gm, name):
        self.g = kfuse.Graph(name)
        self.env = {}
        self.specs = []
        places = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.index = {n: i for i, n in enumerate(places)}
        self.gm = gm

    def input(self, node, shape=None):
        """The kfuse input for placeholder `node` (viewed as `shape`), declared on first use."""
        v = _val(node)
        _check_tensor(v, f"input {node.name}")
        shape = tuple(v.shape) if shape is None else tuple(shape)
        key = (node, shape)
        if key not in self.env:
            self.env[key] = self.g.input(f"in{len(self.specs)}", _DTYPES[v.dtype], list(shape))
            view = None if shape == tuple(v.shape) else shape
            self.specs.append(InputSpec(self.index[node], view))
        return self.env[key]

    def get(self, a, allow_trans=False):
        if not isinstance(a, torch.fx.Node):
            if isinstance(a, bool) or not isinstance(a, (int, float)):
                raise Unsupported(f"operand {a!r} is not a number")
            return a
        r = self.input(a) if a.op == "placeholder" else self.env[a]
        if isinstance(r, Trans) and not allow_trans:
            raise Unsupported(f"{a.name}: a transposed value read by another op than matmul")
        return r

    def tensor(self, a, dtype=None):
        v = self.get(a)
        if dtype is not None and isinstance(v, kfuse.Value) and v.dtype != dtype:
            v = v.cast(dtype)
        return v

    def run(self):
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                outs = node.args[0]
                outs = outs if isinstance(outs, (list, tuple)) else [outs]
                vals = [self.get(o) for o in outs]
                for v in vals:
                    if not isinstance(v, kfuse.Value):
                        raise Unsupported("a partition output that is not a tensor")
                self.g.output(*vals)
                return self.g, self.specs, [tuple(_val(o).shape) for o in outs]
            if node.op != "call_function":
                raise Unsupported(f"{node.op} node in a partition")
            self.env[node] = self.node(node)
        raise Unsupported("a partition without output")

    def node(self, node):
        name = opname(node)
        out = _val(node)
        dt = _DTYPES.get(out.dtype) if isinstance(out, torch.Tensor) else None
        a = node.args
        if name in UNARY:
            return kfuse.op(UNARY[name], self.tensor(a[0], dt))
        if name in BINARY:
            return self.binary(node, BINARY[name], dt)
        if name in CASTS:
            return kfuse.cast(self.tensor(a[0]), dt)
        if name in IDENTITY:
            return self.get(a[0], allow_trans=True)
        if name in VIEWS:
            src = a[0]
            if src.op == "placeholder":
                return self.input(src, out.shape)
            if tuple(out.shape) != tuple(_val(src).shape):
                raise Unsupported("a reshape of a value computed in kfuse")
            return self.get(src)
        if name in TRANSPOSES:
            v = self.get(a[0], allow_trans=True)
            return v.value if isinstance(v, Trans) else Trans(v)
        if name in MATMUL:
            return self.matmul(node, name, dt)
        if name in REDUCE:
            return self.reduce(node, name, dt)
        return self.other(node, name, dt)

    def binary(self, node, op, dt):
        a, b = node.args[0], node.args[1]
        alpha = node.kwargs.get("alpha", 1)
        x, y = self.tensor(a, dt), self.tensor(b, dt)
        if alpha != 1:
            y = y * alpha if isinstance(y, kfuse.Value) else y * alpha
        if not isinstance(x, kfuse.Value) and not isinstance(y, kfuse.Value):
            raise Unsupported("a binary op of two numbers")
        return kfuse.op(op, x, y)

    def matmul(self, node, name, dt):
        a = node.args[1:3] if name == "addmm" else node.args[0:2]
        x, w = (self.get(t, allow_trans=True) for t in a)
        ta, tb = isinstance(x, Trans), isinstance(w, Trans)
        x, w = (x.value if ta else x), (w.value if tb else w)
        r = kfuse.matmul(x, w, trans_a=ta, trans_b=tb)
        if name == "addmm":
            beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
            if alpha != 1:
                r = r * alpha
            bias = self.tensor(node.args[0], dt)
            r = r + (bias if beta == 1 else bias * beta)
        return r

    def reduce(self, node, name, dt):
        x = self.tensor(node.args[0])
        keep = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        overload = getattr(node.target, "_overloadname", "")
        if name in ("sum", "mean") and overload == "default":
            dims, keep = None, False
        if x.dtype != dt:
            x = x.cast(dt)  # sum(..., dtype=) reduces in the dtype asked for
        return kfuse.reduce(REDUCE[name], x, _dims(dims, len(x.shape)), keep)

    def other(self, node, name, dt):
        a, kw = node.args, node.kwargs
        if name == "gelu":
            approx = kw.get("approximate", a[1] if len(a) > 1 else "none")
            return kfuse.op("gelu_tanh" if approx == "tanh" else "gelu", self.tensor(a[0], dt))
        if name == "reciprocal":
            return kfuse.op("div", 1.0, self.tensor(a[0], dt))
        if name == "rsub":
            alpha = kw.get("alpha", 1)
            x = self.tensor(a[0], dt)
            return kfuse.op("sub", self.tensor(a[1], dt), x * alpha if alpha != 1 else x)
        if name == "_softmax":
            return kfuse.softmax(self.tensor(a[0]), a[1])
        if name == "_log_softmax":
            return kfuse.log_softmax(self.tensor(a[0]), a[1])
        if name in ("var_mean", "var"):
            x = self.tensor(a[0])
            dims = a[1] if len(a) > 1 else kw.get("dim")
            corr = kw.get("correction")
            corr = 1.0 if corr is None else float(corr)
            var, mean = kfuse.var_mean(x, _dims(dims, len(x.shape)), corr,
                                       kw.get("keepdim", False))
            return (var, mean) if name == "var_mean" else var
        if name in ("native_layer_norm", "layer_norm"):
            x = self.tensor(a[0])
            w = self.tensor(a[2]) if len(a) > 2 and a[2] is not None else None
            b = self.tensor(a[3]) if len(a) > 3 and a[3] is not None else None
            y = kfuse.layer_norm(x, w, b, a[4] if len(a) > 4 else 1e-5)
            return (y, None, None) if name == "native_layer_norm" else y
        if name == "getitem":
            r = self.env[a[0]][a[1]]
            if r is None and node.users:
                raise Unsupported("an item kfuse does not compute")
            return r
        raise Unsupported(f"{node.target} has no kfuse mapping")


def convert(gm, name="region"):
    """(kfuse.Graph, [InputSpec], [output shape]) of partition gm; raises Unsupported."""
    return _Converter(gm, name).run()
