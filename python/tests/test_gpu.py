"""The package on the GPU with torch CUDA tensors: no copies, the caller's current stream,
torch-allocated outputs, CUDA graph capture, the __cuda_array_interface__ and __dlpack__
paths, and the backend on a transformers feed-forward module and on one of ours against
eager in bf16. Skipped without torch or a GPU."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    torch, HAVE_GPU = None, False

import kfuse  # noqa: E402

BF16 = dict(atol=3e-2, rtol=3e-2)


def mlp(m=64, k=256, n=512, dtype="bf16"):
    g = kfuse.Graph("mlp")
    x = g.input("x", dtype, [m, k])
    w = g.input("w", dtype, [n, k])
    b = g.input("b", dtype, [n])
    g.output(kfuse.gelu_tanh(kfuse.matmul(x, w, trans_b=True) + b), kfuse.softmax(x, -1))
    return g


def mlp_ref(x, w, b):
    return (torch.nn.functional.gelu(x.float() @ w.float().t() + b.float(), approximate="tanh"),
            torch.softmax(x.float(), -1))


class Cai:  # only __cuda_array_interface__
    def __init__(self, t):
        self.__cuda_array_interface__ = t.__cuda_array_interface__


class DLPackOnly:
    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__()


@unittest.skipUnless(HAVE_GPU, "no torch with a GPU")
class TorchTensorTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.args = [torch.randn(s, device="cuda", dtype=torch.bfloat16) * 0.5
                     for s in ([64, 256], [512, 256], [512])]
        self.m = kfuse.compile(mlp())

    def test_matches_torch(self):
        y, s = self.m(*self.args)
        self.assertEqual((y.dtype, y.device.type, tuple(y.shape)),
                         (torch.bfloat16, "cuda", (64, 512)))
        ry, rs = mlp_ref(*self.args)
        torch.testing.assert_close(y.float(), ry, **BF16)
        torch.testing.assert_close(s.float(), rs, **BF16)

    def test_current_stream_and_out(self):
        out = [torch.empty(64, 512, device="cuda", dtype=torch.bfloat16),
               torch.empty(64, 256, device="cuda", dtype=torch.bfloat16)]
        ptrs = [o.data_ptr() for o in out]
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            y, sm = self.m(*self.args, out=out)
        s.synchronize()
        self.assertEqual([y.data_ptr(), sm.data_ptr()], ptrs)
        torch.testing.assert_close(y.float(), mlp_ref(*self.args)[0], **BF16)

    def test_cuda_graph_capture_and_replay(self):
        self.m(*self.args)  # loads the executable outside the capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y, _ = self.m(*self.args)
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(y.float(), mlp_ref(*self.args)[0], **BF16)
        y2, _ = self.m(*self.args, replay=True)
        torch.testing.assert_close(y2, y)

    def test_cai_and_dlpack(self):
        g = kfuse.Graph("scale")
        x = g.input("x", "f32", [1000])
        g.output(x * 3.0 + 1.0)
        m = kfuse.compile(g)
        t = torch.randn(1000, device="cuda")
        out = torch.empty_like(t)
        m(Cai(t), out=[Cai(out)])
        torch.cuda.synchronize()
        torch.testing.assert_close(out, t * 3 + 1)
        out.zero_()
        m(DLPackOnly(t), out=[DLPackOnly(out)])
        torch.cuda.synchronize()
        torch.testing.assert_close(out, t * 3 + 1)
        with self.assertRaises(kfuse.KfuseError):
            m(Cai(t))  # no allocator known: out= is needed

    def test_refusals(self):
        x, w, b = self.args
        with self.assertRaises(kfuse.KfuseError):
            self.m(x.t().contiguous().t(), w, b)  # the right shape, not contiguous
        with self.assertRaises(kfuse.KfuseError):
            self.m(x.float(), w, b)
        with self.assertRaises(kfuse.KfuseError):
            self.m(x, w)
        with self.assertRaises(kfuse.KfuseError) as e:
            self.m(x, w, b, out=[torch.empty(64, 511, device="cuda", dtype=torch.bfloat16),
                                 torch.empty_like(x)])
        self.assertIn("out= for output", str(e.exception))


@unittest.skipUnless(HAVE_GPU, "no torch with a GPU")
class BackendGpuTest(unittest.TestCase):
    def setUp(self):
        import kfuse.torch as kt
        self.kt = kt
        kt.reset()
        torch._dynamo.reset()
        torch.manual_seed(0)

    def check(self, model, x):
        with torch.no_grad():
            ref = model(x)
            out = torch.compile(model, backend="kfuse")(x)
        torch.testing.assert_close(out.float(), ref.float(), **BF16)
        rec = self.kt.records()[-1]
        ops = [op for r in rec.regions for op in r[1]]
        self.assertGreaterEqual(ops.count("aten.matmul.default") + ops.count("aten.mm.default"), 1)
        print(self.kt.summary(report=True))
        return rec

    def test_llama_mlp(self):
        try:
            from transformers import LlamaConfig
            from transformers.models.llama.modeling_llama import LlamaMLP
        except ImportError:
            self.skipTest("transformers is not importable")
        cfg = LlamaConfig(hidden_size=512, intermediate_size=1408, hidden_act="silu")
        m = LlamaMLP(cfg).to("cuda", torch.bfloat16).eval()
        rec = self.check(m, torch.randn(2, 64, 512, device="cuda", dtype=torch.bfloat16))
        self.assertEqual(rec.fallbacks, [])

    def test_own_block(self):
        from test_torch_backend import FFN
        m = FFN(512, 1024, dtype=torch.bfloat16).to("cuda").eval()
        self.check(m, torch.randn(128, 512, device="cuda", dtype=torch.bfloat16))


if __name__ == "__main__":
    unittest.main()
