# Tests specials_vs_torch itself (a ctest test): on the recorded PyTorch 2.15 CPU output
# (fixtures/torch_2.15_cpu.json, written by torch_specials.py) it must pass, and on copies
# with one value made wrong it must fail and name that case; a 1-ulp change of a
# transcendental on an ordinary input must still pass, a 1-ulp change of a special value
# must not, and a JSON that lacks an op of ir/Ops.def is bad input (exit 2).
#   python3 test_specials_checker.py build/bin/specials_vs_torch fixtures/torch_2.15_cpu.json TMPDIR
import copy, json, os, struct, subprocess, sys

checker, fixture, tmp = sys.argv[1:4]
os.makedirs(tmp, exist_ok=True)
base = json.load(open(fixture))
failures = []


def run(doc, name):
    path = os.path.join(tmp, name + '.json')
    json.dump(doc, open(path, 'w'))
    p = subprocess.run([checker, path], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def expect(name, doc, rc, must=(), mustnot=()):
    got, out = run(doc, name)
    ok = got == rc and all(m in out for m in must) and not any(m in out for m in mustnot)
    print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {got} (want {rc})")
    if not ok:
        failures.append(name)
        print(out)


def f32_next(v):  # the next f32 above v (v > 0)
    b = struct.unpack('<I', struct.pack('<f', v))[0]
    return struct.unpack('<f', struct.pack('<I', b + 1))[0]


U = base['U']
cpu32 = 'cpu-float32'

expect('recorded-torch-output', base, 0,
       must=['0 not explained', 'OK: every disagreement', 'deviation [max-min-signed-zero]: 4 cases'])

# exp(-0) = 1 exactly in torch; claim it is 2.0: an arithmetic error.
d = copy.deepcopy(base)
d['unary']['exp'][cpu32][U.index('-0')] = '2.0'
expect('wrong-exp-of-minus-zero', d, 1, must=['DISAGREE exp cpu-float32 (-0) torch=2', 'FAIL'])

# A sign of zero: mul(-0, 1) is -0; claim +0.
d = copy.deepcopy(base)
B = base['B']
d['binary']['mul'][cpu32][B.index('-0') * len(B) + B.index('1.0')] = '0'
expect('wrong-sign-of-zero', d, 1, must=['DISAGREE mul cpu-float32 (-0, 1) torch=0 kfuse=-0'])

# A NaN where kfuse has a number, in f64.
d = copy.deepcopy(base)
d['binary']['pow']['cpu-float64'][B.index('nan') * len(B) + B.index('0')] = 'nan'
expect('nan-for-pow-nan-0', d, 1, must=['DISAGREE pow cpu-float64 (nan, 0) torch=nan kfuse=1'])

# exp(1) one ulp off on an ordinary input: within the budget, still passes.
d = copy.deepcopy(base)
i = U.index('1.0')
d['unary']['exp'][cpu32][i] = repr(f32_next(float(base['unary']['exp'][cpu32][i])))
expect('one-ulp-on-exp-of-1', d, 0, must=['0 not explained'])

# exp(-inf) is +0; a denormal one ulp away is still wrong (a special value).
d = copy.deepcopy(base)
d['unary']['exp'][cpu32][U.index('-inf')] = repr(struct.unpack('<f', struct.pack('<I', 1))[0])
expect('one-ulp-on-exp-of-minus-inf', d, 1, must=['DISAGREE exp cpu-float32 (-inf)'])

# A cast bit pattern: f16 of 65520 is Inf (0x7c00); claim 0x7bff.
d = copy.deepcopy(base)
d['cast']['cpu-float16'][base['C'].index('65520.0')] = '7bff'
expect('wrong-f16-overflow', d, 1, must=['DISAGREE cast cpu-float16 (65520) torch=7bff kfuse=7c00'])

# A disagreement of a deliberate deviation's kind stays a deviation; the same wrong zero on
# another op does not: max(+0, -0) = -0 is listed (torch's order), add(0, -0) = -0 is not.
d = copy.deepcopy(base)
d['binary']['add'][cpu32][B.index('0') * len(B) + B.index('-0')] = '-0'
expect('wrong-zero-sign-on-add', d, 1, must=['DISAGREE add cpu-float32 (0, -0) torch=-0 kfuse=0'],
       mustnot=['DEVIATION [max-min-signed-zero] add'])

# Scalar/vector split entries are checked both ways.
d = copy.deepcopy(base)
vec = list(base['unary']['neg'][cpu32])
vec[U.index('0')] = '0'  # neg(0) is -0
d['unary']['neg'][cpu32] = {'scalar': base['unary']['neg'][cpu32], 'vector': vec}
expect('vector-path-disagrees', d, 1, must=['DISAGREE neg cpu-float32/vector (0) torch=0 kfuse=-0'],
       mustnot=['DISAGREE neg cpu-float32/scalar'])

# Bad input: an op of Ops.def missing, and a list of the wrong length.
d = copy.deepcopy(base)
del d['unary']['silu']
expect('missing-op', d, 2, must=["unary op 'silu' of ir/Ops.def is not in the JSON"])
d = copy.deepcopy(base)
d['unary']['abs'][cpu32] = d['unary']['abs'][cpu32][:-1]
expect('short-list', d, 2, must=['unary.abs.cpu-float32 has 18 values for 19 inputs'])

print(f"{len(failures)} failed" if failures else "all checker self-tests passed")
sys.exit(1 if failures else 0)
