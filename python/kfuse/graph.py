"""Graphs: kfuse.Graph, its values, the ops as functions and operators, and parsing .kf."""

import ctypes
import numbers

from . import _lib
from ._lib import KfuseError, check, cstr

__all__ = ["Graph", "Value", "parse", "parse_all", "op", "UNARY", "BINARY", "REDUCTIONS"]

UNARY = ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu",
         "gelu_tanh", "silu")
BINARY = ("add", "sub", "mul", "div", "max", "min", "pow")
REDUCTIONS = ("sum", "mean", "amax", "amin")


def _attr_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_attr_text(x) for x in v) + "]"
    return str(v)


def _attrs(attrs):
    return ", ".join(f"{k}={_attr_text(v)}" for k, v in attrs.items()) or None


class Value:
    """A value of a graph: an input, an op's result (or a literal, internally). Operators
    build ops: + - * / ** @ and unary -; methods name the others (x.exp(), x.cast("f32"),
    x.sum(axes=[-1]))."""

    __slots__ = ("graph", "handle", "__weakref__")

    def __init__(self, graph, handle):
        self.graph = graph
        self.handle = handle

    @property
    def dtype(self):
        d = ctypes.c_int32()
        check(_lib.lib().kfuse_value_dtype(self.graph.handle, self.handle, ctypes.byref(d)))
        return _lib.DTYPE_NAMES[d.value]

    @property
    def shape(self):
        L, g = _lib.lib(), self.graph.handle
        rank = ctypes.c_size_t()
        check(L.kfuse_value_shape(g, self.handle, None, 0, ctypes.byref(rank)))
        dims = (ctypes.c_int64 * max(rank.value, 1))()
        check(L.kfuse_value_shape(g, self.handle, dims, rank.value, ctypes.byref(rank)))
        return tuple(dims[i] for i in range(rank.value))

    @property
    def nbytes(self):
        n = ctypes.c_size_t()
        check(_lib.lib().kfuse_value_bytes(self.graph.handle, self.handle, ctypes.byref(n)))
        return n.value

    @property
    def name(self):
        return _lib.out_string(_lib.lib().kfuse_value_name, self.graph.handle, self.handle)

    @name.setter
    def name(self, name):
        check(_lib.lib().kfuse_value_set_name(self.graph.handle, self.handle, cstr(name)))

    def named(self, name):
        """Names the value (%name in .kf and in kernels' comments) and returns it."""
        self.name = name
        return self

    def __repr__(self):
        n = self.name
        return f"<kfuse.Value %{n or '?'} {self.dtype}{list(self.shape)}>"

    def __eq__(self, other):
        return isinstance(other, Value) and other.handle == self.handle

    def __hash__(self):
        return hash(self.handle)

    # Operators: a Python number on either side is a scalar literal.
    def __add__(self, o): return op("add", self, o)
    def __radd__(self, o): return op("add", o, self)
    def __sub__(self, o): return op("sub", self, o)
    def __rsub__(self, o): return op("sub", o, self)
    def __mul__(self, o): return op("mul", self, o)
    def __rmul__(self, o): return op("mul", o, self)
    def __truediv__(self, o): return op("div", self, o)
    def __rtruediv__(self, o): return op("div", o, self)
    def __pow__(self, o): return op("pow", self, o)
    def __rpow__(self, o): return op("pow", o, self)
    def __neg__(self): return op("neg", self)
    def __abs__(self): return op("abs", self)
    def __matmul__(self, o): return op("matmul", self, o)

    def matmul(self, o, trans_a=False, trans_b=False):
        return op("matmul", self, o, trans_a=trans_a, trans_b=trans_b)

    def cast(self, to):
        return op("cast", self, to=to)

    def sum(self, axes, keepdims=False): return reduce("sum", self, axes, keepdims)
    def mean(self, axes, keepdims=False): return reduce("mean", self, axes, keepdims)
    def amax(self, axes, keepdims=False): return reduce("amax", self, axes, keepdims)
    def amin(self, axes, keepdims=False): return reduce("amin", self, axes, keepdims)


def _unary_method(name):
    def f(self):
        return op(name, self)
    f.__name__ = name
    f.__doc__ = f"`{name}` of this value (docs/language.md)."
    return f


for _n in UNARY:
    if not hasattr(Value, _n):
        setattr(Value, _n, _unary_method(_n))
Value.maximum = lambda self, o: op("max", self, o)
Value.minimum = lambda self, o: op("min", self, o)


def _graph_of(operands):
    for v in operands:
        if isinstance(v, Value):
            return v.graph
    raise TypeError("an op needs at least one kfuse.Value operand")


def _handle(g, v):
    if isinstance(v, Value):
        if v.graph is not g:
            raise KfuseError("a value of another graph is refused",
                             "KFUSE_ERROR_INVALID_ARGUMENT", 1)
        return v.handle
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        out = ctypes.c_void_p()
        check(_lib.lib().kfuse_graph_literal(g.handle, float(v), ctypes.byref(out)))
        return out.value
    raise TypeError(f"operand {v!r} is neither a kfuse.Value nor a number")


def op(name, *operands, **attrs):
    """Any op of ir/Ops.def by its .kf name, with its attributes as keywords:
    op("matmul", x, w, trans_b=True), op("cast", y, to="f32"), op("sum", x, axes=[-1])."""
    g = _graph_of(operands)
    hs = (ctypes.c_void_p * max(len(operands), 1))(*[_handle(g, v) for v in operands])
    out = ctypes.c_void_p()
    check(_lib.lib().kfuse_graph_add_op(g.handle, cstr(name), hs, len(operands),
                                        cstr(_attrs(attrs)), ctypes.byref(out)))
    return Value(g, out.value)


def _axes(axes):
    axes = [axes] if isinstance(axes, int) else list(axes)
    return (ctypes.c_int64 * max(len(axes), 1))(*axes), len(axes)


def reduce(name, x, axes, keepdims=False):
    """sum, mean, amax or amin of x over axes (an int or a list; negative from the end)."""
    arr, n = _axes(axes)
    out = ctypes.c_void_p()
    check(_lib.lib().kfuse_graph_add_reduction(x.graph.handle, cstr(name), x.handle, arr, n,
                                               int(bool(keepdims)), ctypes.byref(out)))
    return Value(x.graph, out.value)


def softmax(x, axis=-1):
    out = ctypes.c_void_p()
    check(_lib.lib().kfuse_graph_add_softmax(x.graph.handle, x.handle, axis, ctypes.byref(out)))
    return Value(x.graph, out.value)


def log_softmax(x, axis=-1):
    out = ctypes.c_void_p()
    check(_lib.lib().kfuse_graph_add_log_softmax(x.graph.handle, x.handle, axis,
                                                 ctypes.byref(out)))
    return Value(x.graph, out.value)


def rms_norm(x, w=None, eps=1e-6):
    """Hugging Face's LlamaRMSNorm over the last axis (w [N] or None)."""
    out = ctypes.c_void_p()
    check(_lib.lib().kfuse_graph_add_rms_norm(x.graph.handle, x.handle,
                                              None if w is None else _handle(x.graph, w),
                                              float(eps), ctypes.byref(out)))
    return Value(x.graph, out.value)


def layer_norm(x, w=None, b=None, eps=1e-5):
    """torch.nn.functional.layer_norm over the last axis (w, b [N] or None)."""
    g = x.graph
    out = ctypes.c_void_p()
    check(_lib.lib().kfuse_graph_add_layer_norm(
        g.handle, x.handle, None if w is None else _handle(g, w),
        None if b is None else _handle(g, b), float(eps), ctypes.byref(out)))
    return Value(g, out.value)


def var_mean(x, axes=-1, correction=1.0, keepdims=False):
    """torch.var_mean: (variance, mean) over axes; correction 1 is the unbiased variance."""
    arr, n = _axes(axes)
    var, mean = ctypes.c_void_p(), ctypes.c_void_p()
    check(_lib.lib().kfuse_graph_add_var_mean(x.graph.handle, x.handle, arr, n,
                                              float(correction), int(bool(keepdims)),
                                              ctypes.byref(var), ctypes.byref(mean)))
    return Value(x.graph, var.value), Value(x.graph, mean.value)


def matmul(a, b, trans_a=False, trans_b=False):
    return op("matmul", a, b, trans_a=trans_a, trans_b=trans_b)


def cast(x, to):
    return op("cast", x, to=to)


class Graph:
    """A kfuse graph (kfuse_graph). str(g) is its .kf text."""

    def __init__(self, name="main", _handle=None):
        self._L = _lib.lib()
        if _handle is None:
            h = ctypes.c_void_p()
            check(self._L.kfuse_graph_create(cstr(name), ctypes.byref(h)))
            _handle = h.value
        self.handle = _handle

    def __del__(self):
        h, self.handle = getattr(self, "handle", None), None
        if h:
            self._L.kfuse_graph_destroy(h)

    @property
    def name(self):
        return _lib.out_string(self._L.kfuse_graph_name, self.handle)

    def input(self, name, dtype, shape):
        """A named input of dtype "f32", "f16" or "bf16" and shape (a list of ints; [] is a
        scalar). Inputs are bound in the order they are added."""
        if dtype not in _lib.DTYPES:
            raise KfuseError(f"kfuse.Graph.input: dtype {dtype!r} is not one of f32, f16, bf16",
                             "KFUSE_ERROR_INVALID_ARGUMENT", 1)
        dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        out = ctypes.c_void_p()
        check(self._L.kfuse_graph_add_input(self.handle, cstr(name), _lib.DTYPES[dtype], dims,
                                            len(shape), ctypes.byref(out)))
        return Value(self, out.value)

    def output(self, *values):
        """Appends graph outputs (in order)."""
        for v in values:
            check(self._L.kfuse_graph_add_output(self.handle, _handle(self, v)))
        return values[0] if len(values) == 1 else values

    def op(self, name, *operands, **attrs):
        """op(name, ...) where every operand may be a number (at least one is a Value)."""
        if not any(isinstance(v, Value) for v in operands):
            raise TypeError("an op needs at least one kfuse.Value operand")
        return op(name, *operands, **attrs)

    def _values(self, count_fn, get_fn):
        n = ctypes.c_size_t()
        check(count_fn(self.handle, ctypes.byref(n)))
        out = []
        for i in range(n.value):
            h = ctypes.c_void_p()
            check(get_fn(self.handle, i, ctypes.byref(h)))
            out.append(Value(self, h.value))
        return out

    @property
    def inputs(self):
        return self._values(self._L.kfuse_graph_num_inputs, self._L.kfuse_graph_input)

    @property
    def outputs(self):
        return self._values(self._L.kfuse_graph_num_outputs, self._L.kfuse_graph_output)

    def find(self, name):
        """The value named `name` (no '%')."""
        h = ctypes.c_void_p()
        check(self._L.kfuse_graph_find(self.handle, cstr(name), ctypes.byref(h)))
        return Value(self, h.value)

    def __getitem__(self, name):
        return self.find(name)

    def verify(self):
        check(self._L.kfuse_graph_verify(self.handle))

    def text(self):
        return _lib.out_string(self._L.kfuse_graph_print, self.handle)

    def __str__(self):
        return self.text()

    def __repr__(self):
        return f"<kfuse.Graph {self.name}: {len(self.inputs)} inputs, {len(self.outputs)} outputs>"

    def copy(self):
        """An independent copy (through its .kf text)."""
        return parse(self.text())

    def run_cpu(self, *arrays):
        """The reference interpreter on host arrays (see kfuse.Module.__call__)."""
        from . import buffers
        return buffers.run_cpu(self, arrays)


def _graph_set(text, filename):
    L = _lib.lib()
    s = ctypes.c_void_p()
    check(L.kfuse_parse_string(cstr(text), cstr(filename), ctypes.byref(s)))
    return L, s


def parse_all(text, filename=None):
    """Every graph of a .kf text: a dict name -> Graph, in the text's order."""
    L, s = _graph_set(text, filename)
    try:
        n = ctypes.c_size_t()
        check(L.kfuse_graph_set_count(s, ctypes.byref(n)))
        out = {}
        for i in range(n.value):
            name = _lib.out_string(L.kfuse_graph_set_name, s, i)
            h = ctypes.c_void_p()
            check(L.kfuse_graph_set_get(s, cstr(name), ctypes.byref(h)))
            out[name] = Graph(_handle=h.value)
        return out
    finally:
        L.kfuse_graph_set_destroy(s)


def parse(text, name=None, filename=None):
    """The graph of a .kf text: the one named `name`, or the only one."""
    L, s = _graph_set(text, filename)
    try:
        h = ctypes.c_void_p()
        check(L.kfuse_graph_set_get(s, cstr(name), ctypes.byref(h)))
        return Graph(_handle=h.value)
    finally:
        L.kfuse_graph_set_destroy(s)
