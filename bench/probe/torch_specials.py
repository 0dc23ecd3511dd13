# Prints PyTorch's results for every kfuse elementwise op on special values (NaN, +-Inf,
# -0, f32 denormals), on the CPU and CUDA, in f32 and f64, as JSON: the ground truth the
# interpreter's special-value table (tests/unit/SpecialValuesTest.cpp) was checked against.
import json, math, struct, sys
import torch
import torch.nn.functional as F

U = [float('nan'), float('inf'), float('-inf'), 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5,
     1e-40, -1e-40, 1.1754944e-38, 100.0, -100.0, 1e30, -1e30, 3.0, -3.0]
B = [float('nan'), float('inf'), float('-inf'), 0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -0.5,
     1e-40, -3.0, 3.5, 0.3333333]

unary = {
    'neg': torch.neg, 'abs': torch.abs, 'exp': torch.exp, 'log': torch.log,
    'sqrt': torch.sqrt, 'rsqrt': torch.rsqrt, 'tanh': torch.tanh, 'sigmoid': torch.sigmoid,
    'relu': torch.relu, 'gelu': F.gelu, 'gelu_tanh': lambda x: F.gelu(x, approximate='tanh'),
    'silu': F.silu,
}
binary = {
    'add': torch.add, 'sub': torch.sub, 'mul': torch.mul, 'div': torch.div,
    'max': torch.maximum, 'min': torch.minimum, 'pow': torch.pow,
}

def enc(v):
    if math.isnan(v): return 'nan'
    if math.isinf(v): return 'inf' if v > 0 else '-inf'
    if v == 0: return '-0' if math.copysign(1, v) < 0 else '0'
    return repr(v)

out = {'torch': torch.__version__, 'unary': {}, 'binary': {}, 'cast': {}}
devs = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])
for dev in devs:
    for dt in [torch.float32, torch.float64]:
        tag = f'{dev}-{str(dt)[6:]}'
        for name, f in unary.items():
            # 64 copies so the vectorised CPU path runs too; report the first and any disagreement.
            x = torch.tensor(U, dtype=dt, device=dev)
            xs = x.repeat(64)
            r1 = [enc(float(v)) for v in f(x).cpu()]
            r2 = [enc(float(v)) for v in f(xs).cpu()[:len(U)]]
            out['unary'].setdefault(name, {})[tag] = r1 if r1 == r2 else {'scalar': r1, 'vector': r2}
        for name, f in binary.items():
            a = torch.tensor([p for p in B for q in B], dtype=dt, device=dev)
            b = torch.tensor([q for p in B for q in B], dtype=dt, device=dev)
            r1 = [enc(float(v)) for v in f(a, b).cpu()]
            r2 = [enc(float(v)) for v in f(a.repeat(16), b.repeat(16)).cpu()[:len(a)]]
            out['binary'].setdefault(name, {})[tag] = r1 if r1 == r2 else {'scalar': r1, 'vector': r2}
    C = [float('nan'), float('inf'), -0.0, 1e-40, 6e-8, 3e-8, 2.98e-8, 6.1e-5, 65504.0, 65519.0,
         65520.0, 1e-39, 9.2e-41, 3.4e38, -3.39e38, 1.00390625, 1.01171875, 5.96e-8]
    for dt in [torch.float16, torch.bfloat16]:
        x = torch.tensor(C, dtype=torch.float32, device=dev)
        r = x.to(dt).view(torch.int16).cpu().tolist()
        out['cast'][f'{dev}-{str(dt)[6:]}'] = [f'{v & 0xffff:04x}' for v in r]
out['U'] = [enc(v) for v in U]
out['B'] = [enc(v) for v in B]
out['C'] = [repr(v) for v in C]
json.dump(out, open(sys.argv[1], 'w'), indent=1)
print('ok', torch.__version__, devs)
