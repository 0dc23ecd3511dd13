"""Arrays in and out of kfuse without copies: torch tensors (data_ptr), anything with
__cuda_array_interface__ or __dlpack__ (device pointers), and host arrays (numpy, CPU torch
tensors, DLPack on the CPU) for the reference interpreter."""

import ctypes

from . import _lib
from ._lib import KfuseError, check

__all__ = ["Buffer", "describe", "run_cpu", "NUMPY_DTYPES"]

# kfuse dtype -> numpy dtype name (bf16: ml_dtypes' bfloat16 where installed, else the bits
# as uint16).
NUMPY_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
_TYPESTR = {"<f4": "f32", "<f2": "f16", "<V2": "bf16"}
_DL_CODES = {(2, 32): "f32", (2, 16): "f16", (4, 16): "bf16"}  # (kDLFloat|kDLBfloat, bits)
_TORCH_DTYPES = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16"}
KDL_CPU, KDL_CUDA = 1, 2


class Buffer:
    """One array as kfuse sees it: its address, kfuse dtype, shape, whether it is on the GPU
    (and which device), and what keeps it alive."""

    __slots__ = ("ptr", "dtype", "shape", "cuda", "device", "keep")

    def __init__(self, ptr, dtype, shape, cuda, device=0, keep=None):
        self.ptr, self.dtype, self.shape = ptr, dtype, tuple(shape)
        self.cuda, self.device, self.keep = cuda, device, keep


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _contiguous(shape, strides, itemsize_units=1):
    """Whether strides (in elements; None: C order) are row-major for shape."""
    if strides is None:
        return True
    expect = 1
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1 and s != expect * itemsize_units:
            return False
        expect *= d
    return True


def _from_torch(t):
    dtype = _TORCH_DTYPES.get(str(t.dtype))
    if dtype is None:
        raise KfuseError(f"torch dtype {t.dtype} is not f32, f16 or bf16", "KFUSE_ERROR_TYPE", 5)
    if not t.is_contiguous():
        raise KfuseError(f"a torch tensor of strides {tuple(t.stride())} is not contiguous; "
                         "call .contiguous() (kfuse takes row-major buffers)",
                         "KFUSE_ERROR_INVALID_ARGUMENT", 1)
    cuda = t.is_cuda
    return Buffer(t.data_ptr(), dtype, t.shape, cuda, t.get_device() if cuda else 0, t)


def _from_cai(obj, cai):
    dtype = _TYPESTR.get(cai["typestr"])
    if dtype is None:
        raise KfuseError(f"__cuda_array_interface__ typestr {cai['typestr']!r} is not f32/f16",
                         "KFUSE_ERROR_TYPE", 5)
    shape = tuple(cai["shape"])
    strides = cai.get("strides")
    if not _contiguous(shape, strides, 4 if dtype == "f32" else 2):
        raise KfuseError("a __cuda_array_interface__ array that is not C-contiguous",
                         "KFUSE_ERROR_INVALID_ARGUMENT", 1)
    return Buffer(cai["data"][0], dtype, shape, True, 0, obj)


def _from_dlpack(obj, stream=None):
    cap = obj.__dlpack__() if stream is None else obj.__dlpack__(stream=stream)
    t = _DLTensor.from_address(_capsule_pointer(cap, b"dltensor"))
    key = (t.dtype.code, t.dtype.bits)
    if key not in _DL_CODES or t.dtype.lanes != 1:
        raise KfuseError(f"DLPack dtype code {t.dtype.code} bits {t.dtype.bits} is not "
                         "f32, f16 or bf16", "KFUSE_ERROR_TYPE", 5)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = None if not t.strides else tuple(t.strides[i] for i in range(t.ndim))
    if not _contiguous(shape, strides):
        raise KfuseError("a DLPack tensor that is not C-contiguous",
                         "KFUSE_ERROR_INVALID_ARGUMENT", 1)
    kind = t.device.device_type
    if kind not in (KDL_CPU, KDL_CUDA):
        raise KfuseError(f"DLPack device type {kind} is neither the CPU nor CUDA",
                         "KFUSE_ERROR_INVALID_ARGUMENT", 1)
    # The capsule keeps the producer's memory alive (its deleter runs when it is freed).
    return Buffer((t.data or 0) + t.byte_offset, _DL_CODES[key], shape, kind == KDL_CUDA,
                  t.device.device_id, (obj, cap))


def describe(obj):
    """The Buffer of obj: a torch tensor, a numpy array, or anything with
    __cuda_array_interface__ or __dlpack__."""
    mod = type(obj).__module__
    if mod.startswith("torch"):
        return _from_torch(obj)
    if mod == "numpy" and hasattr(obj, "__array_interface__"):
        return _from_numpy(obj)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return _from_cai(obj, cai)
    if hasattr(obj, "__dlpack__"):
        return _from_dlpack(obj)
    raise TypeError(f"kfuse cannot read a {type(obj).__name__}: pass a torch tensor, a numpy "
                    "array, or an object with __cuda_array_interface__ or __dlpack__")


def _from_numpy(a):
    ai = a.__array_interface__
    name = a.dtype.name
    dtype = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}.get(name)
    if dtype is None:
        raise KfuseError(f"numpy dtype {name} is not float32, float16 or bfloat16 "
                         "(ml_dtypes); convert bf16 with kfuse.encode", "KFUSE_ERROR_TYPE", 5)
    if not a.flags["C_CONTIGUOUS"]:
        raise KfuseError("a numpy array that is not C-contiguous; use numpy.ascontiguousarray",
                         "KFUSE_ERROR_INVALID_ARGUMENT", 1)
    return Buffer(ai["data"][0], dtype, a.shape, False, 0, a)


def numpy_dtype(dtype):
    import numpy as np
    if dtype == "bf16":
        try:
            import ml_dtypes
            return np.dtype(ml_dtypes.bfloat16)
        except ImportError:
            return np.dtype("uint16")
    return np.dtype(NUMPY_DTYPES[dtype])


def check_inputs(signature, bufs):
    """Raises unless bufs match signature [(name, dtype, shape)]."""
    if len(bufs) != len(signature):
        raise KfuseError(f"the graph takes {len(signature)} inputs "
                         f"({', '.join(n for n, _, _ in signature)}), got {len(bufs)}",
                         "KFUSE_ERROR_INVALID_ARGUMENT", 1)
    for (name, dtype, shape), b in zip(signature, bufs):
        bdt = b.dtype
        if bdt != dtype and not (dtype == "bf16" and bdt is None):
            raise KfuseError(f"input %{name} is {dtype}{list(shape)}, got a {bdt} array",
                             "KFUSE_ERROR_TYPE", 5)
        if b.shape != tuple(shape):
            raise KfuseError(f"input %{name} is {dtype}{list(shape)}, got shape {list(b.shape)}",
                             "KFUSE_ERROR_TYPE", 5)


def _host_buffer(a, dtype):
    """A numpy uint16 array standing for bf16 bits is accepted for a bf16 input."""
    mod = type(a).__module__
    if mod == "numpy" and dtype == "bf16" and a.dtype.name == "uint16":
        if not a.flags["C_CONTIGUOUS"]:
            raise KfuseError("a numpy array that is not C-contiguous",
                             "KFUSE_ERROR_INVALID_ARGUMENT", 1)
        return Buffer(a.__array_interface__["data"][0], "bf16", a.shape, False, 0, a)
    return describe(a)


def run_cpu(graph, arrays, signature=None, outputs=None):
    """Runs graph on the reference interpreter. Inputs: host arrays (numpy, CPU torch
    tensors, DLPack on the CPU), in input order; returns new arrays of the first input's
    kind (numpy unless given torch tensors), in output order."""
    from .module import signature_of
    ins, outs = signature if signature is not None else signature_of(graph)
    bufs = [_host_buffer(a, ins[i][1] if i < len(ins) else None) for i, a in enumerate(arrays)]
    for b in bufs:
        if b.cuda:
            raise KfuseError("run_cpu: a device array; the CPU interpreter takes host memory",
                             "KFUSE_ERROR_INVALID_ARGUMENT", 1)
    check_inputs(ins, bufs)
    use_torch = bool(arrays) and type(arrays[0]).__module__.startswith("torch")
    if outputs is None:
        outputs = [_empty_host(dt, shape, use_torch) for _, dt, shape in outs]
    obufs = [describe(o) if not _is_u16(o) else
             Buffer(o.__array_interface__["data"][0], "bf16", o.shape, False) for o in outputs]
    ip = (ctypes.c_void_p * max(len(bufs), 1))(*[b.ptr for b in bufs])
    op = (ctypes.c_void_p * max(len(obufs), 1))(*[b.ptr for b in obufs])
    check(_lib.lib().kfuse_run_cpu(graph.handle, ip, len(bufs), op, len(obufs)))
    return outputs


def _is_u16(a):
    return type(a).__module__ == "numpy" and a.dtype.name == "uint16"


def _empty_host(dtype, shape, use_torch):
    if use_torch:
        import torch
        td = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
        return torch.empty(tuple(shape), dtype=td)
    import numpy as np
    return np.empty(tuple(shape), dtype=numpy_dtype(dtype))


def encode(array, dtype):
    """float32 numpy array -> a numpy array of dtype's storage (bf16: uint16 bits, or
    ml_dtypes.bfloat16 where installed), rounding to nearest even as kfuse does."""
    import numpy as np
    src = np.ascontiguousarray(array, dtype=np.float32)
    dst = np.empty(src.shape, dtype=numpy_dtype(dtype))
    check(_lib.lib().kfuse_encode(_lib.DTYPES[dtype], src.ctypes.data, src.size, dst.ctypes.data))
    return dst


def decode(array, dtype=None):
    """A numpy array of a kfuse dtype's storage (float16, bfloat16 or uint16 bf16 bits) ->
    float32."""
    import numpy as np
    src = np.ascontiguousarray(array)
    if dtype is None:
        dtype = {"float32": "f32", "float16": "f16", "bfloat16": "bf16",
                 "uint16": "bf16"}[src.dtype.name]
    dst = np.empty(src.shape, dtype=np.float32)
    check(_lib.lib().kfuse_decode(_lib.DTYPES[dtype], src.ctypes.data, src.size, dst.ctypes.data))
    return dst
