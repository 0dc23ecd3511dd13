"""kfuse from Python: build graphs, compile them, run them on torch CUDA tensors (or any
__dlpack__ / __cuda_array_interface__ array) and on numpy arrays through the reference
interpreter. A pure-Python package over libkfuse's C API (ctypes): docs/python.md.

    import kfuse
    g = kfuse.Graph("mlp")
    x = g.input("x", "bf16", [64, 4096])
    w = g.input("w", "bf16", [11008, 4096])
    g.output(kfuse.gelu_tanh(kfuse.matmul(x, w, trans_b=True)))
    m = kfuse.compile(g)
    y = m(x_tensor, w_tensor)

`import kfuse.torch` registers the torch.compile backend "kfuse".
"""

from ._lib import KfuseError, find_library
from .buffers import decode, encode
from .graph import (BINARY, REDUCTIONS, UNARY, Graph, Value, cast, layer_norm, log_softmax,
                    matmul, op, parse, parse_all, reduce, rms_norm, softmax, var_mean)
from .module import Kernel, Module, Report, compile, device

__version__ = "0.1.0"


def library_version():
    """libkfuse's version string ("0.1.0") and the path it was loaded from."""
    from . import _lib
    L = _lib.lib()
    return L.kfuse_version_string().decode(), L.path


def _function(name):
    def f(*operands):
        return op(name, *operands)
    f.__name__ = name
    f.__doc__ = f"The `{name}` op (docs/language.md)."
    return f


for _name in UNARY + BINARY:
    globals()[_name] = _function(_name)
maximum, minimum = globals()["max"], globals()["min"]
del globals()["max"], globals()["min"]  # do not shadow the builtins on `from kfuse import *`


def sum(x, axes, keepdims=False):  # noqa: A001 (the op's name)
    return reduce("sum", x, axes, keepdims)


def mean(x, axes, keepdims=False):
    return reduce("mean", x, axes, keepdims)


def amax(x, axes, keepdims=False):
    return reduce("amax", x, axes, keepdims)


def amin(x, axes, keepdims=False):
    return reduce("amin", x, axes, keepdims)
