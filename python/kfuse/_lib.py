"""libkfuse through ctypes: finding the library, declaring the C API, turning statuses into
exceptions. Nothing here is public; kfuse/__init__.py exports what is."""

import ctypes
import os
import pathlib
import threading

__all__ = ["KfuseError", "lib", "check", "cstr", "find_library", "DTYPES", "DTYPE_NAMES"]

# kfuse_dtype's values (include/kfuse/kfuse.h).
DTYPES = {"f32": 0, "f16": 1, "bf16": 2}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
STAGES = {"plan": 0, "source": 1, "cubin": 2}

# The soname first: the one a build or an install of this version provides.
_NAMES = ("libkfuse.so.0.1", "libkfuse.so")


class KfuseError(RuntimeError):
    """A kfuse call failed. `status` is the C status name ("KFUSE_ERROR_TYPE"), `code` its
    value, and the message kfuse_last_error()'s text."""

    def __init__(self, message, status="KFUSE_ERROR_INTERNAL", code=15):
        super().__init__(message)
        self.status = status
        self.code = code


class CompileOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("arch", ctypes.c_char_p),
                ("device", ctypes.c_char_p), ("tf32", ctypes.c_int), ("fusion", ctypes.c_int),
                ("jobs", ctypes.c_uint), ("stage", ctypes.c_int32),
                ("dump_dir", ctypes.c_char_p)]


def find_library():
    """Where libkfuse is: $KFUSE_LIBRARY (a file, or a folder holding it); the build tree
    beside this source (build/lib of the repository holding python/kfuse); the library
    installed beside this Python (PREFIX/lib); else the system loader's search
    (LD_LIBRARY_PATH, ldconfig) by soname. Returns a path or a bare soname."""
    env = os.environ.get("KFUSE_LIBRARY")
    if env:
        p = pathlib.Path(env)
        if p.is_dir():
            for n in _NAMES:
                if (p / n).exists():
                    return str(p / n)
            raise KfuseError(f"KFUSE_LIBRARY={env} is a folder without {' or '.join(_NAMES)}",
                             "KFUSE_ERROR_IO", 12)
        return str(p)
    here = pathlib.Path(__file__).resolve().parent
    candidates = [here.parent.parent / "build" / "lib"]
    import sys
    candidates += [pathlib.Path(sys.prefix) / "lib", pathlib.Path(sys.prefix) / "lib64"]
    for d in candidates:
        for n in _NAMES:
            if (d / n).exists():
                return str(d / n)
    return _NAMES[0]


_lib = None
_lock = threading.Lock()

_vp = ctypes.c_void_p
_sz = ctypes.c_size_t
_P = ctypes.POINTER
_cs = ctypes.c_char_p
_i64p = _P(ctypes.c_int64)

# name: argument types (every function returns kfuse_status unless listed in _STRINGS).
_SIGNATURES = {
    "kfuse_get_version": [_P(ctypes.c_int)] * 3,
    "kfuse_graph_create": [_cs, _P(_vp)],
    "kfuse_graph_destroy": [_vp],
    "kfuse_graph_add_input": [_vp, _cs, ctypes.c_int32, _i64p, _sz, _P(_vp)],
    "kfuse_graph_add_op": [_vp, _cs, _P(_vp), _sz, _cs, _P(_vp)],
    "kfuse_graph_literal": [_vp, ctypes.c_double, _P(_vp)],
    "kfuse_graph_add_output": [_vp, _vp],
    "kfuse_graph_verify": [_vp],
    "kfuse_graph_print": [_vp, _P(_cs)],
    "kfuse_graph_name": [_vp, _P(_cs)],
    "kfuse_graph_num_inputs": [_vp, _P(_sz)],
    "kfuse_graph_num_outputs": [_vp, _P(_sz)],
    "kfuse_graph_input": [_vp, _sz, _P(_vp)],
    "kfuse_graph_output": [_vp, _sz, _P(_vp)],
    "kfuse_graph_find": [_vp, _cs, _P(_vp)],
    "kfuse_value_set_name": [_vp, _vp, _cs],
    "kfuse_value_name": [_vp, _vp, _P(_cs)],
    "kfuse_value_dtype": [_vp, _vp, _P(ctypes.c_int32)],
    "kfuse_value_shape": [_vp, _vp, _i64p, _sz, _P(_sz)],
    "kfuse_value_bytes": [_vp, _vp, _P(_sz)],
    "kfuse_parse_string": [_cs, _cs, _P(_vp)],
    "kfuse_parse_file": [_cs, _P(_vp)],
    "kfuse_graph_set_destroy": [_vp],
    "kfuse_graph_set_count": [_vp, _P(_sz)],
    "kfuse_graph_set_name": [_vp, _sz, _P(_cs)],
    "kfuse_graph_set_get": [_vp, _cs, _P(_vp)],
    "kfuse_compile_options_init": [_P(CompileOptions)],
    "kfuse_compile": [_vp, _P(CompileOptions), _P(_vp)],
    "kfuse_module_destroy": [_vp],
    "kfuse_module_arch": [_vp, _P(_cs)],
    "kfuse_module_num_kernels": [_vp, _P(_sz)],
    "kfuse_module_kernel_name": [_vp, _sz, _P(_cs)],
    "kfuse_module_kernel_source": [_vp, _sz, _P(_cs)],
    "kfuse_module_plan": [_vp, _P(_cs)],
    "kfuse_module_expected_seconds": [_vp, _P(ctypes.c_double)],
    "kfuse_module_report_json": [_vp, _P(_cs)],
    "kfuse_module_fusion_json": [_vp, _P(_cs)],
    "kfuse_module_kernels_json": [_vp, _P(_cs)],
    "kfuse_run_cpu": [_vp, _P(_vp), _sz, _P(_vp), _sz],
    "kfuse_encode": [ctypes.c_int32, _vp, _sz, _vp],
    "kfuse_decode": [ctypes.c_int32, _vp, _sz, _vp],
    "kfuse_dtype_size": [ctypes.c_int32, _P(_sz)],
    "kfuse_device_get": [_P(_cs), _P(ctypes.c_int), _P(ctypes.c_int), _P(ctypes.c_int)],
    "kfuse_executable_create": [_vp, _P(_vp)],
    "kfuse_executable_destroy": [_vp],
    "kfuse_executable_launch": [_vp, _P(_vp), _sz, _P(_vp), _sz, _vp],
    "kfuse_executable_replay": [_vp, _P(_vp), _sz, _P(_vp), _sz, _vp],
    "kfuse_graph_add_reduction": [_vp, _cs, _vp, _i64p, _sz, ctypes.c_int, _P(_vp)],
    "kfuse_graph_add_softmax": [_vp, _vp, ctypes.c_int64, _P(_vp)],
    "kfuse_graph_add_log_softmax": [_vp, _vp, ctypes.c_int64, _P(_vp)],
    "kfuse_graph_add_rms_norm": [_vp, _vp, _vp, ctypes.c_double, _P(_vp)],
    "kfuse_graph_add_layer_norm": [_vp, _vp, _vp, _vp, ctypes.c_double, _P(_vp)],
    "kfuse_graph_add_var_mean": [_vp, _vp, _i64p, _sz, ctypes.c_double, ctypes.c_int,
                                 _P(_vp), _P(_vp)],
}
_STRINGS = {"kfuse_last_error": [], "kfuse_status_name": [ctypes.c_int32],
            "kfuse_version_string": []}


def _load():
    path = find_library()
    try:
        handle = ctypes.CDLL(path)
    except OSError as e:
        raise KfuseError(
            f"cannot load libkfuse ({path}): {e}. Build kfuse (README's setup) or set "
            "KFUSE_LIBRARY to libkfuse.so's path", "KFUSE_ERROR_IO", 12) from None
    for name, args in _SIGNATURES.items():
        f = getattr(handle, name)
        f.argtypes = args
        f.restype = ctypes.c_int32
    for name, args in _STRINGS.items():
        f = getattr(handle, name)
        f.argtypes = args
        f.restype = ctypes.c_char_p
    handle.path = path
    return handle


def lib():
    """The loaded library (loaded on first use, so `import kfuse` works without it)."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                _lib = _load()
    return _lib


def error(status):
    L = lib()
    name = L.kfuse_status_name(status).decode()
    msg = L.kfuse_last_error().decode(errors="replace")
    return KfuseError(msg or name, name, status)


def check(status):
    if status != 0:
        raise error(status)


def cstr(s):
    return None if s is None else s.encode()


def out_string(fn, *args):
    """Calls fn(*args, &text) and returns the text."""
    s = ctypes.c_char_p()
    check(fn(*args, ctypes.byref(s)))
    return s.value.decode() if s.value is not None else ""
