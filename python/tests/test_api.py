"""The Python API on the CPU: graphs, .kf text, errors, compile reports, and numpy arrays
through the reference interpreter. Run: python3 -m unittest discover -s python/tests
(KFUSE_LIBRARY=build/lib/libkfuse.so where the package cannot find the build tree)."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import kfuse  # noqa: E402


def mlp_graph():
    g = kfuse.Graph("mlp")
    x = g.input("x", "f32", [2, 3])
    w = g.input("w", "f32", [4, 3])
    b = g.input("b", "f32", [4])
    y = kfuse.relu(kfuse.matmul(x, w, trans_b=True) + b).named("y")
    g.output(y)
    return g


class GraphTest(unittest.TestCase):
    def test_version(self):
        self.assertEqual(kfuse.__version__, kfuse.library_version()[0])

    def test_print_parse_round_trip(self):
        g = mlp_graph()
        text = str(g)
        self.assertIn("%0 = matmul %x, %w, trans_b=true  # f32[2, 4]", text)
        self.assertIn("%y = relu %1", text)
        self.assertEqual(str(kfuse.parse(text)), text)
        self.assertEqual(g.find("y").shape, (2, 4))
        self.assertEqual([v.name for v in g.inputs], ["x", "w", "b"])

    def test_operators_and_literals(self):
        g = kfuse.Graph("ops")
        x = g.input("x", "bf16", [4, 8])
        y = (2.0 - x) * 0.5 / x + x ** 2
        z = (-abs(x)).exp().cast("f32").named("z")
        s = kfuse.softmax(z)
        r = kfuse.rms_norm(x, g.input("w", "bf16", [8]), eps=1e-6)
        var, mean = kfuse.var_mean(z, axes=[-1], correction=0, keepdims=True)
        g.output(y, z, s, r, var, mean, kfuse.sum(z, axes=[0]), z.amax(-1, keepdims=True))
        self.assertEqual(y.dtype, "bf16")
        self.assertEqual(z.dtype, "f32")
        self.assertEqual(var.shape, (4, 1))
        self.assertEqual(kfuse.sum(z, axes=[0]).shape, (8,))
        text = str(g)
        for frag in ("sub 2.0, %x", "mul %", "pow %x, 2.0", "cast %", "amax %z, axes=[-1]"):
            self.assertIn(frag, text)
        kfuse.parse(text).verify()

    def test_every_op_has_a_function(self):
        g = kfuse.Graph("every")
        x = g.input("x", "f32", [3])
        for name in kfuse.UNARY:
            g.output(getattr(kfuse, name)(x))
        for name in ("add", "sub", "mul", "div", "maximum", "minimum", "pow"):
            g.output(getattr(kfuse, name)(x, x))
        self.assertEqual(len(g.outputs), len(kfuse.UNARY) + 7)

    def test_errors_carry_the_message(self):
        g = kfuse.Graph("bad")
        x = g.input("x", "f32", [2, 3])
        with self.assertRaises(kfuse.KfuseError) as e:
            x + g.input("y", "f32", [4])
        self.assertEqual(e.exception.status, "KFUSE_ERROR_TYPE")
        self.assertIn("do not broadcast", str(e.exception))
        with self.assertRaises(kfuse.KfuseError) as e:
            kfuse.op("gelu_fast", x)
        self.assertEqual(e.exception.status, "KFUSE_ERROR_UNKNOWN_OP")
        with self.assertRaises(kfuse.KfuseError) as e:
            kfuse.op("matmul", x, x, transb=True)
        self.assertIn("unknown attribute 'transb'", str(e.exception))
        with self.assertRaises(kfuse.KfuseError) as e:
            kfuse.parse("graph g {\n  %y = relu %x\n}\n")
        self.assertEqual(e.exception.status, "KFUSE_ERROR_PARSE")
        with self.assertRaises(kfuse.KfuseError) as e:
            kfuse.compile(g)  # no outputs
        self.assertEqual(e.exception.status, "KFUSE_ERROR_INVALID_GRAPH")
        other = kfuse.Graph("other").input("z", "f32", [2, 3])
        with self.assertRaises(kfuse.KfuseError):
            x + other

    def test_parse_all(self):
        gs = kfuse.parse_all("graph a {\n %x = input f32[2]\n output %x\n}\n"
                             "graph b {\n %x = input f32[2]\n %y = neg %x\n output %y\n}\n")
        self.assertEqual(list(gs), ["a", "b"])
        with self.assertRaises(kfuse.KfuseError) as e:
            kfuse.parse(str(gs["a"]) + str(gs["b"]))
        self.assertEqual(e.exception.status, "KFUSE_ERROR_NOT_FOUND")


class CompileTest(unittest.TestCase):
    def test_report_and_kernels(self):
        m = kfuse.compile(mlp_graph(), arch="sm_90a", stage="source")
        self.assertEqual(m.arch, "sm_90a")
        r = m.report()
        self.assertEqual(r.fused["launches"], 1)
        self.assertEqual(r.unfused["launches"], 3)
        self.assertEqual(json.loads(r.json)["graph"], "mlp")
        self.assertIn("3 ops unfused -> 1 kernels", str(r))
        ks = m.kernels()
        self.assertEqual(len(ks), 1)
        self.assertIn("__global__", ks[0].source)
        self.assertEqual(ks[0].launch["block"][1:], [1, 1])
        self.assertIn("kernel k0 {", m.plan)
        self.assertGreater(m.expected_seconds, 0)

    def test_no_fusion_and_bad_options(self):
        m = kfuse.compile(mlp_graph(), arch="sm_90a", stage="plan", fusion=False)
        self.assertEqual(m.report().fused["launches"], 3)
        with self.assertRaises(kfuse.KfuseError) as e:
            kfuse.compile(mlp_graph(), arch="sm_1", stage="plan")
        self.assertEqual(e.exception.status, "KFUSE_ERROR_INVALID_ARGUMENT")
        with self.assertRaises(kfuse.KfuseError):
            kfuse.compile(mlp_graph(), stage="ptx")


class CpuRunTest(unittest.TestCase):
    def test_mlp_numpy(self):
        rng = np.random.default_rng(0)
        x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ([2, 3], [4, 3], [4]))
        m = kfuse.compile(mlp_graph(), arch="sm_90a", stage="plan")
        y = m(x, w, b)
        np.testing.assert_allclose(y, np.maximum(x @ w.T + b, 0), rtol=1e-6, atol=1e-6)
        y2 = mlp_graph().run_cpu(x, w, b)[0]
        np.testing.assert_array_equal(y, y2)

    def test_bf16_and_reductions(self):
        g = kfuse.Graph("sm")
        x = g.input("x", "bf16", [3, 5])
        g.output(kfuse.softmax(x.cast("f32")), kfuse.mean(x, axes=[-1]))
        m = kfuse.compile(g, arch="sm_90a", stage="plan")
        xf = np.linspace(-2, 2, 15, dtype=np.float32).reshape(3, 5)
        xb = kfuse.encode(xf, "bf16")
        self.assertEqual(xb.dtype.itemsize, 2)
        s, mu = m(xb)
        xr = kfuse.decode(xb, "bf16")
        e = np.exp(xr - xr.max(-1, keepdims=True))
        np.testing.assert_allclose(s, e / e.sum(-1, keepdims=True), rtol=1e-6)
        np.testing.assert_allclose(kfuse.decode(mu, "bf16"), xr.mean(-1), rtol=1e-2, atol=1e-2)

    def test_f16_layer_norm(self):
        g = kfuse.Graph("ln")
        x = g.input("x", "f16", [4, 16])
        g.output(kfuse.layer_norm(x, eps=1e-5))
        x16 = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float16)
        y = kfuse.compile(g, arch="sm_90a", stage="plan")(x16)
        self.assertEqual(y.dtype, np.float16)
        xf = x16.astype(np.float64)
        ref = (xf - xf.mean(-1, keepdims=True)) / np.sqrt(xf.var(-1, keepdims=True) + 1e-5)
        np.testing.assert_allclose(y.astype(np.float64), ref, rtol=2e-3, atol=2e-3)

    def test_bad_arrays(self):
        m = kfuse.compile(mlp_graph(), arch="sm_90a", stage="plan")
        x, w, b = (np.zeros(s, np.float32) for s in ([2, 3], [4, 3], [4]))
        with self.assertRaises(kfuse.KfuseError) as e:
            m(x, w)
        self.assertIn("takes 3 inputs", str(e.exception))
        with self.assertRaises(kfuse.KfuseError) as e:
            m(x, w, np.zeros(5, np.float32))
        self.assertIn("input %b is f32[4], got shape [5]", str(e.exception))
        with self.assertRaises(kfuse.KfuseError):
            m(x.astype(np.float64), w, b)
        with self.assertRaises(kfuse.KfuseError):
            m(np.zeros([3, 2], np.float32).T, w, b)
        with self.assertRaises(TypeError):
            m([[0.0] * 3] * 2, w, b)

    def test_dlpack_host_array(self):
        class Wrapped:
            def __init__(self, a):
                self.a = a

            def __dlpack__(self, stream=None):
                return self.a.__dlpack__()

        if not hasattr(np.ndarray, "__dlpack__"):
            self.skipTest("numpy without __dlpack__")
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        buf = kfuse.buffers.describe(Wrapped(a))
        self.assertEqual((buf.ptr, buf.dtype, buf.shape, buf.cuda),
                         (a.ctypes.data, "f32", (2, 3), False))


if __name__ == "__main__":
    unittest.main()
