"""The torch.compile backend on FX graphs, on the CPU: which aten ops map, the folding of
linear's views, partitions, fallbacks and their reasons, the module cache, and numbers
against eager (kfuse's reference interpreter runs CPU tensors). Skipped without torch."""

import os
import sys
import unittest
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

try:
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx
except ImportError:  # CI has no torch: every test here is skipped
    torch = None

if torch is not None:
    import kfuse.torch as kt
    from kfuse.torch import convert


def aten_graph(f, *args):
    """f traced to aten ops, with meta['val'] on every node (as aot_autograd gives); a
    module's parameters become inputs, as torch.compile lifts them."""
    if isinstance(f, torch.nn.Module):
        names = [n for n, _ in f.named_parameters()]
        params = [p.detach() for _, p in f.named_parameters()]
        mod = f

        def f(x, *ps):
            return torch.func.functional_call(mod, dict(zip(names, ps)), (x,))
        args = args + tuple(params)
    with torch.no_grad():
        return make_fx(f, tracing_mode="fake")(*args)


class FFN(torch.nn.Module if torch else object):
    def __init__(self, h=32, i=64, dtype=None):
        super().__init__()
        self.gate = torch.nn.Linear(h, i, bias=False, dtype=dtype)
        self.up = torch.nn.Linear(h, i, bias=False, dtype=dtype)
        self.down = torch.nn.Linear(i, h, bias=True, dtype=dtype)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


def rms_norm(x, w, eps=1e-6):  # Hugging Face's LlamaRMSNorm, as written there
    h = x.to(torch.float32)
    var = h.pow(2).mean(-1, keepdim=True)
    return w * (h * torch.rsqrt(var + eps)).to(x.dtype)


@unittest.skipIf(torch is None, "torch is not importable")
class MappingTest(unittest.TestCase):
    def test_fold_linear_views(self):
        m = FFN().eval()
        gm = aten_graph(m, torch.randn(2, 4, 32))
        names = [convert.opname(n) for n in gm.graph.nodes]
        self.assertIn("view", names)
        self.assertEqual(convert.fold_linear_views(gm), 3)
        names = [convert.opname(n) for n in gm.graph.nodes]
        self.assertEqual(names.count("matmul"), 3)
        self.assertNotIn("view", names)
        self.assertNotIn("mm", names)
        with torch.no_grad():
            x = torch.randn(2, 4, 32)
            torch.testing.assert_close(gm(x, *[p.detach() for p in m.parameters()]), m(x))

    def test_support_and_reasons(self):
        def f(x, w):
            y = torch.cumsum(x, -1) + torch.relu(x @ w.t())
            return y.view(-1), w.t() * 2
        gm = aten_graph(f, torch.randn(4, 8), torch.randn(8, 8))
        reasons = {str(n.target): r for n, r in convert.support(gm).items()}
        self.assertIn("no kfuse mapping", reasons["aten.cumsum.default"])
        self.assertIsNone(reasons["aten.relu.default"])
        self.assertIsNone(reasons["aten.mm.default"])
        self.assertIn("no reshape op", reasons["aten.view.default"])

    def test_int_and_dynamic_refused(self):
        gm = aten_graph(lambda x: x + 1, torch.arange(4))
        self.assertIn("torch.int64", [r for r in convert.support(gm).values()][0])


@unittest.skipIf(torch is None, "torch is not importable")
class BackendCpuTest(unittest.TestCase):
    def setUp(self):
        kt.reset()
        torch._dynamo.reset()
        torch.manual_seed(0)

    def compiled(self, f, *args, **tol):
        with torch.no_grad():
            ref = f(*args)
            out = torch.compile(f, backend="kfuse")(*args)
        torch.testing.assert_close(out, ref, **tol)
        return kt.records()[-1]

    def test_registered(self):
        self.assertIn("kfuse", torch._dynamo.list_backends())

    def test_ffn_one_region(self):
        rec = self.compiled(FFN().eval(), torch.randn(2, 4, 32))
        self.assertEqual(len(rec.regions), 1)
        ops = rec.regions[0][1]
        self.assertEqual(ops.count("aten.matmul.default"), 3)
        self.assertIn("aten.silu.default", ops)
        self.assertEqual(rec.fallbacks, [])
        self.assertIn("ops in 3 kfuse kernels", kt.summary())

    def test_bf16_norms_and_softmax(self):
        w = torch.randn(64, dtype=torch.bfloat16)
        ln = torch.nn.LayerNorm(64, dtype=torch.bfloat16)

        def f(x):
            r = rms_norm(x, w)
            return torch.softmax(r.float(), -1), ln(x + r), torch.var_mean(x.float(), -1)
        rec = self.compiled(f, torch.randn(8, 64, dtype=torch.bfloat16), atol=2e-2, rtol=2e-2)
        self.assertEqual(rec.fallbacks, [])
        self.assertEqual(len(rec.regions), 1)

    def test_layer_norm_joins_its_readers(self):
        def f(x, w, b):
            y = torch.nn.functional.layer_norm(x, (32,), w, b)
            return torch.softmax(y, -1), y.sum(-1), torch.cumsum(y, -1)
        rec = self.compiled(f, torch.randn(4, 32), torch.randn(32), torch.randn(32),
                            atol=1e-5, rtol=1e-5)
        self.assertEqual(len(rec.regions), 1)
        self.assertEqual(rec.regions[0][2], 1)  # one kfuse kernel: norm, softmax and sum

    def test_fallback_is_reported(self):
        def f(x):
            return torch.cumsum(torch.exp(x), -1) * 2
        rec = self.compiled(f, torch.randn(4, 8))
        self.assertEqual([op for op, _ in rec.fallbacks], ["aten.cumsum.default"])
        self.assertIn("PyTorch: aten.cumsum.default", kt.summary())

    def test_cache_per_shape(self):
        m = FFN().eval()
        self.compiled(m, torch.randn(2, 4, 32))
        n = len(kt._CACHE)
        torch._dynamo.reset()
        self.compiled(m, torch.randn(2, 4, 32))
        self.assertEqual(len(kt._CACHE), n)
        torch._dynamo.reset()
        self.compiled(m, torch.randn(3, 4, 32))
        self.assertEqual(len(kt._CACHE), n + 1)

    def test_non_contiguous_argument(self):
        def f(x):
            return torch.sigmoid(x.t().contiguous().t() * 3) + 1
        self.compiled(f, torch.randn(8, 4).t())

    def test_autograd_is_refused_with_a_warning(self):
        m = FFN()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = torch.compile(m, backend="kfuse")(torch.randn(2, 32))
        self.assertTrue(y.requires_grad)
        self.assertTrue(any("inference-only" in str(i.message) for i in w))
        self.assertIn("autograd requested", kt.summary())


if __name__ == "__main__":
    unittest.main()
