"""kfuse.compile and the compiled Module: what the compiler did (report, kernels, plan), and
running it on device arrays (the caller's stream, outputs from the caller's allocator) or on
host arrays through the reference interpreter."""

import ctypes
import json

from . import _lib, buffers
from ._lib import KfuseError, check, cstr

__all__ = ["compile", "Module", "Report", "Kernel", "device", "signature_of"]


def device():
    """(name, (major, minor), sm_count) of device 0 as kfuse sees it, or None without a
    CUDA driver or GPU."""
    name, ma, mi, sms = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    s = _lib.lib().kfuse_device_get(ctypes.byref(name), ctypes.byref(ma), ctypes.byref(mi),
                                    ctypes.byref(sms))
    if s != 0:
        return None
    return name.value.decode(), (ma.value, mi.value), sms.value


def signature_of(graph):
    """([(name, dtype, shape)] of the inputs, [(name, dtype, shape)] of the outputs)."""
    return ([(v.name, v.dtype, v.shape) for v in graph.inputs],
            [(v.name, v.dtype, v.shape) for v in graph.outputs])


class Kernel:
    """One kernel of a module, in launch order: name ("k0"), function, kind (the GEMM kernel
    and tile, or "pointwise", ...), launch ({"grid", "block", "shared_bytes", "cluster",
    "cooperative"}), registers,
    spill_stores and spill_loads (-1 before the cubin stage), expected_seconds,
    why, compile_ms, cached, source (CUDA C) and info (kernels.json's whole entry)."""

    def __init__(self, info, source):
        self.info = info
        self.source = source
        for k in ("name", "function", "kind", "launch", "registers", "spill_stores",
                  "spill_loads", "expected_seconds", "why", "compile_ms", "cached"):
            setattr(self, k, info.get(k))

    def __repr__(self):
        return (f"<kfuse.Kernel {self.name} {self.kind}: launch {self.launch}, "
                f"{self.registers} registers>")


class Report:
    """The traffic report (`kfuse report --json`'s object): .data (the dict), .json (the
    text), .fused / .unfused ({launches, bytes, flops, seconds, kernels}), .byte_saving,
    .decisions (the fusion decisions); str() is a short summary."""

    def __init__(self, text, fusion_text):
        self.json = text
        self.data = json.loads(text)
        self.fused = self.data.get("fused", {})
        self.unfused = self.data.get("unfused", {})
        self.byte_saving = self.data.get("byte_saving")
        self.decisions = json.loads(fusion_text) if fusion_text else []

    def __str__(self):
        f, u = self.fused, self.unfused
        lines = [f"graph {self.data.get('graph')}: {u.get('launches')} ops unfused -> "
                 f"{f.get('launches')} kernels, {u.get('bytes')} -> {f.get('bytes')} bytes, "
                 f"expected {_us(u.get('seconds'))} -> {_us(f.get('seconds'))}"]
        for k in f.get("kernels", []):
            mm = " (matmul)" if k.get("matmul") else ""
            lines.append(f"  {k.get('name')}: {k.get('ops')} ops{mm}"
                         f", {k.get('bound')}-bound, {_us(k.get('seconds'))}")
        for d in self.decisions:
            if not d.get("fused"):
                lines.append(f"  not fused {d.get('producer')} -> {d.get('consumer')}: "
                             f"{d.get('reason')}")
        return "\n".join(lines)

    def __repr__(self):
        return f"<kfuse.Report {self.data.get('graph')}>"


def _us(s):
    return "?" if s is None else f"{s * 1e6:.3g} us"


def _options(arch, device_model, tf32, fusion, jobs, stage, dump_dir):
    o = _lib.CompileOptions()
    check(_lib.lib().kfuse_compile_options_init(ctypes.byref(o)))
    keep = []
    if arch == "auto":
        arch = "device" if device() is not None else None
    for field, v in (("arch", arch), ("device", device_model), ("dump_dir", dump_dir)):
        if v is not None:
            b = cstr(str(v))
            keep.append(b)
            setattr(o, field, b)
    o.tf32, o.fusion, o.jobs = int(bool(tf32)), int(bool(fusion)), int(jobs)
    if stage not in _lib.STAGES:
        raise KfuseError(f"kfuse.compile: stage {stage!r} is not plan, source or cubin",
                         "KFUSE_ERROR_INVALID_ARGUMENT", 1)
    o.stage = _lib.STAGES[stage]
    return o, keep


def compile(graph, arch="auto", device=None, tf32=False, fusion=True, jobs=0, stage="cubin",
            dump_dir=None):
    """Compiles a kfuse.Graph (kfuse_compile). arch "auto": the GPU's own where there is one
    (so the module runs on it), else the device model's (sm_90a); "sm_90", "sm_90a",
    "device", ... as the C API. device: the model of expected times ("h200", "h100", ...).
    stage: "plan", "source" or "cubin". The graph is not changed; the module keeps a copy."""
    o, keep = _options(arch, device, tf32, fusion, jobs, stage, dump_dir)
    h = ctypes.c_void_p()
    check(_lib.lib().kfuse_compile(graph.handle, ctypes.byref(o), ctypes.byref(h)))
    del keep
    return Module(h.value, graph)


class Module:
    """A compiled graph. m(*arrays) runs it: device arrays (torch CUDA tensors, or anything
    with __cuda_array_interface__ / __dlpack__) on the GPU, host arrays (numpy, CPU torch
    tensors) on the reference interpreter. Returns a tuple of outputs, or the output alone
    when the graph has one."""

    def __init__(self, handle, graph):
        self._L = _lib.lib()
        self.handle = handle
        self.text = graph.text()
        self.inputs, self.outputs = signature_of(graph)
        self._graph = None
        self._exe = None
        self._torch = None

    def __del__(self):
        L = getattr(self, "_L", None)
        if L is None:
            return
        if getattr(self, "_exe", None):
            L.kfuse_executable_destroy(self._exe)
            self._exe = None
        if getattr(self, "handle", None):
            L.kfuse_module_destroy(self.handle)
            self.handle = None

    # What the compiler did.
    @property
    def arch(self):
        return _lib.out_string(self._L.kfuse_module_arch, self.handle)

    @property
    def plan(self):
        """The planned graph as .kf text with its kernel regions."""
        return _lib.out_string(self._L.kfuse_module_plan, self.handle)

    @property
    def expected_seconds(self):
        s = ctypes.c_double()
        check(self._L.kfuse_module_expected_seconds(self.handle, ctypes.byref(s)))
        return s.value

    def report(self):
        return Report(_lib.out_string(self._L.kfuse_module_report_json, self.handle),
                      _lib.out_string(self._L.kfuse_module_fusion_json, self.handle))

    def kernels_json(self):
        return _lib.out_string(self._L.kfuse_module_kernels_json, self.handle)

    def kernels(self):
        """[Kernel] in launch order."""
        infos = json.loads(self.kernels_json()).get("kernels", [])
        out = []
        for i, info in enumerate(infos):
            src = _lib.out_string(self._L.kfuse_module_kernel_source, self.handle, i)
            out.append(Kernel(info, src))
        return out

    def __repr__(self):
        return f"<kfuse.Module {self.arch}: {len(self.inputs)} inputs, {len(self.outputs)} outputs>"

    # Running.
    def graph(self):
        """The compiled graph (a copy, parsed from the text it had when compiled)."""
        if self._graph is None:
            from .graph import parse
            self._graph = parse(self.text)
        return self._graph

    def executable(self):
        """Loads the module on device 0 (once): kfuse_executable_create."""
        if self._exe is None:
            h = ctypes.c_void_p()
            check(self._L.kfuse_executable_create(self.handle, ctypes.byref(h)))
            self._exe = h.value
        return self._exe

    def __call__(self, *arrays, out=None, stream=None, replay=False):
        """Runs the module. Device arrays run on the GPU, asynchronously on `stream` (default:
        torch's current stream for torch tensors, cupy's for cupy arrays, else the legacy
        default stream; an int handle or an object with .cuda_stream / .ptr), into `out` (a
        list of device arrays) or new arrays from the inputs' allocator (torch.empty,
        cupy.empty). replay=True records the launches as one CUDA graph and replays it.
        Host arrays run on the reference interpreter (synchronous, new numpy arrays)."""
        a0 = arrays[0] if arrays else None
        if self._torch is not None and isinstance(a0, self._torch.Tensor) and a0.is_cuda:
            return self._call_torch(arrays, out, stream, replay)
        if type(a0).__module__.startswith("torch"):
            if self._torch is None:
                import torch
                self._torch = torch
                self._prepare_torch()
            if a0.is_cuda:
                return self._call_torch(arrays, out, stream, replay)
        bufs = None if type(a0).__module__ == "numpy" else [buffers.describe(a) for a in arrays]
        if bufs and all(b.cuda for b in bufs):
            return self._call_generic(arrays, bufs, out, stream, replay)
        res = buffers.run_cpu(self.graph(), arrays, (self.inputs, self.outputs), out)
        return res[0] if len(res) == 1 else tuple(res)

    def _prepare_torch(self):
        t = self._torch
        td = {"f32": t.float32, "f16": t.float16, "bf16": t.bfloat16}
        self._tin = [(td[d], t.Size(s)) for _, d, s in self.inputs]
        self._tout = [(td[d], tuple(s)) for _, d, s in self.outputs]
        self._ip = (ctypes.c_void_p * max(len(self.inputs), 1))()
        self._op = (ctypes.c_void_p * max(len(self.outputs), 1))()
        self._raw_stream = t._C._cuda_getCurrentRawStream

    def _call_torch(self, arrays, out, stream, replay):
        """The fast path: a few checks per tensor, torch.empty per output, one C call."""
        exe = self._exe if self._exe is not None else self.executable()
        tin, ip, op = self._tin, self._ip, self._op
        if len(arrays) != len(tin):
            buffers.check_inputs(self.inputs, [buffers.describe(a) for a in arrays])
        dev = arrays[0].device
        for i, a in enumerate(arrays):
            dt, shape = tin[i]
            if (a.dtype != dt or a.shape != shape or not a.is_contiguous() or a.device != dev
                    or dev.index != 0):
                self._refuse(arrays)
            ip[i] = a.data_ptr()
        if out is None:
            empty = self._torch.empty
            out = [empty(s, dtype=d, device=dev) for d, s in self._tout]
        else:
            self._check_out(out, dev)
        for i, o in enumerate(out):
            op[i] = o.data_ptr()
        if stream is None:
            stream = self._raw_stream(0)
        launch = self._L.kfuse_executable_replay if replay else self._L.kfuse_executable_launch
        s = launch(exe, ip, len(tin), op, len(out), _stream_handle(stream))
        if s != 0:
            raise _lib.error(s)
        return out[0] if len(out) == 1 else tuple(out)

    def _check_out(self, out, dev):
        """Given outputs must be what the module writes: the C API checks only their count."""
        if len(out) != len(self._tout):
            raise KfuseError(f"out= holds {len(out)} arrays; the graph has {len(self._tout)} "
                             "outputs", "KFUSE_ERROR_INVALID_ARGUMENT", 1)
        for (name, dtype, shape), (dt, s), o in zip(self.outputs, self._tout, out):
            if (o.dtype != dt or tuple(o.shape) != s or not o.is_contiguous()
                    or o.device != dev):
                raise KfuseError(f"out= for output %{name} must be a contiguous "
                                 f"{dtype}{list(shape)} tensor on {dev}, got {o.dtype} "
                                 f"{list(o.shape)} on {o.device}",
                                 "KFUSE_ERROR_INVALID_ARGUMENT", 1)

    def _refuse(self, arrays):
        bufs = [buffers.describe(a) for a in arrays]
        buffers.check_inputs(self.inputs, bufs)
        for b in bufs:
            if not b.cuda or b.device != 0:
                raise KfuseError("kfuse runs on device 0 (its primary context): got a tensor "
                                 f"on {'the CPU' if not b.cuda else f'cuda:{b.device}'} "
                                 "beside CUDA tensors", "KFUSE_ERROR_INVALID_ARGUMENT", 1)
        raise KfuseError("an input does not match the module", "KFUSE_ERROR_INVALID_ARGUMENT", 1)

    def _call_generic(self, arrays, bufs, out, stream, replay):
        buffers.check_inputs(self.inputs, bufs)
        for b in bufs:
            if b.device != 0:
                raise KfuseError(f"kfuse runs on device 0; got an array on device {b.device}",
                                 "KFUSE_ERROR_INVALID_ARGUMENT", 1)
        mod = type(arrays[0]).__module__.split(".")[0]
        if stream is None and mod == "cupy":
            import cupy
            stream = cupy.cuda.get_current_stream().ptr
        if out is None:
            if mod != "cupy":
                raise KfuseError(f"kfuse cannot allocate {mod} arrays: pass out=[...] (device "
                                 "arrays for the outputs)", "KFUSE_ERROR_INVALID_ARGUMENT", 1)
            import cupy
            out = [cupy.empty(tuple(s), dtype=buffers.numpy_dtype(d)) for _, d, s in self.outputs]
        obufs = [buffers.describe(o) for o in out]
        buffers.check_inputs(self.outputs, obufs)
        ip = (ctypes.c_void_p * max(len(bufs), 1))(*[b.ptr for b in bufs])
        op = (ctypes.c_void_p * max(len(obufs), 1))(*[b.ptr for b in obufs])
        launch = self._L.kfuse_executable_replay if replay else self._L.kfuse_executable_launch
        check(launch(self.executable(), ip, len(bufs), op, len(obufs),
                     _stream_handle(stream or 0)))
        return out[0] if len(out) == 1 else tuple(out)


def _stream_handle(s):
    if isinstance(s, int):
        return s
    for attr in ("cuda_stream", "ptr", "handle"):
        v = getattr(s, attr, None)
        if isinstance(v, int):
            return v
    raise TypeError(f"stream {s!r}: pass an int handle or an object with .cuda_stream or .ptr")
