#!/usr/bin/env python3
"""Independent check of `kfuse run --cpu` on an MLP graph (matmul trans_b, bias, gelu_tanh,
cast): y = gelu_tanh(x @ w^T + b) as bf16, z = the same value cast to f32.

The checker shares no code with kfuse: it makes its own inputs (its own generator, values
rounded to bf16 by bit arithmetic), writes them with its own .npy writer (x and w as '<f4',
b as '<f8'), runs `kfuse run G.kf --cpu --inputs IN --outputs OUT`, reads y.npy and z.npy
with its own reader and recomputes outputs in float64 with the standard library only (no
NumPy, which not every Python here has). For big graphs it recomputes --samples output
elements (corners included) instead of all of them.

Expected: y = bf16(f32(v)) and z = f32(v) for v = gelu_tanh(sum_k x[i,k] w[j,k] + b[j])
computed in float64 (intermediates stay float64 until stored, as in fused kernels), and
z = y (the cast reads y as stored in bf16, as the GPU's kernel does; with --float64, z =
f32(v), the interpreter's unrounded value). A
different summation order may move v by ~1e-16 relative, so y may differ by one bf16 ulp at
a rounding boundary and z by a few f32 ulps; anything more is a failure.
"""
import argparse, array, math, os, random, struct, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("graph_file")
ap.add_argument("--graph", default="", help="graph name (default: the file's first)")
ap.add_argument("--m", type=int, required=True)
ap.add_argument("--n", type=int, required=True)
ap.add_argument("--k", type=int, required=True)
ap.add_argument("--out", required=True, help="scratch folder")
ap.add_argument("--samples", type=int, default=0, help="output elements to check, 0 = all")
ap.add_argument("--kfuse", default="kfuse")
ap.add_argument("--seed", type=int, default=7)
ap.add_argument("--float64", action="store_true",
                help="run kfuse with --float64 (y unrounded before the cast)")
a = ap.parse_args()
M, N, K = a.m, a.n, a.k


def bf16(v):
    """Round a float64 to bfloat16 the way a kernel stores: to f32, then nearest even."""
    bits = struct.unpack("<I", struct.pack("<f", v))[0]
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def bf16_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0] >> 16


def pool(size, rng):
    """`size` bf16 values uniform in [-1, 1) from our own generator (not kfuse's)."""
    out = []
    while len(out) < size:
        v = bf16(rng.uniform(-1.0, 1.0))
        if -1.0 <= v < 1.0 and v != 0.0:
            out.append(v)
    return out


def write_npy(path, shape, values_bytes, descr):
    shape_txt = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_txt)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(values_bytes)


def read_npy_f32(path, shape):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", path + ": no .npy magic"
    assert data[6] == 1, path + ": expected version 1.0"
    hlen = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + hlen].decode("latin1")
    assert (10 + hlen) % 64 == 0, path + ": data not 64-byte aligned"
    assert "'descr': '<f4'" in header, path + ": not '<f4': " + header
    assert "'fortran_order': False" in header, header
    want = "(" + ", ".join(str(d) for d in shape) + ")"
    assert "'shape': " + want in header, path + ": shape " + header + " != " + want
    vals = array.array("f")
    vals.frombytes(data[10 + hlen:])
    assert len(vals) == math.prod(shape), path + ": %d values" % len(vals)
    return vals


def gelu_tanh(v):
    return 0.5 * v * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v * v * v)))


rng = random.Random(a.seed)
# Pools of prime length tiled over the tensors, so 45M weights cost one small pool; each row
# of w still differs from the others (4099 is prime to K and N).
PX, PW = 4093, 4099
xpool, wpool, bvals = pool(min(PX, M * K), rng), pool(min(PW, N * K), rng), pool(N, rng)
def tiled(p, count):
    raw = array.array("f", p).tobytes()
    reps = count // len(p) + 1
    return (raw * reps)[: count * 4]

ind, outd = os.path.join(a.out, "in"), os.path.join(a.out, "out")
os.makedirs(ind, exist_ok=True)
os.makedirs(outd, exist_ok=True)
write_npy(os.path.join(ind, "x.npy"), (M, K), tiled(xpool, M * K), "<f4")
write_npy(os.path.join(ind, "w.npy"), (N, K), tiled(wpool, N * K), "<f4")
write_npy(os.path.join(ind, "b.npy"), (N,), array.array("d", bvals).tobytes(), "<f8")

cmd = [a.kfuse, "run", a.graph_file, "--cpu", "--inputs", ind, "--outputs", outd]
if a.graph:
    cmd += ["--graph", a.graph]
if a.float64:
    cmd += ["--float64"]
r = subprocess.run(cmd, capture_output=True, text=True)
sys.stdout.write(r.stdout)
for f in ("x.npy", "w.npy", "b.npy"): # the weights of the full MLP are 180 MB
    os.remove(os.path.join(ind, f))
if r.returncode != 0:
    sys.exit("check_mlp: kfuse failed (exit %d): %s" % (r.returncode, r.stderr))
for name, ty in (("y", "bf16"), ("z", "f32")):
    want = "%s: %s[%d, %d] min " % (name, ty, M, N)
    if not any(line.startswith(want) for line in r.stdout.splitlines()):
        sys.exit("check_mlp: no summary line '%s...' in kfuse's output" % want)

y = read_npy_f32(os.path.join(outd, "y.npy"), (M, N))
z = read_npy_f32(os.path.join(outd, "z.npy"), (M, N))

if a.samples <= 0 or a.samples >= M * N:
    cells = [(i, j) for i in range(M) for j in range(N)]
else:
    cells = {(0, 0), (0, N - 1), (M - 1, 0), (M - 1, N - 1)}
    while len(cells) < a.samples:
        cells.add((rng.randrange(M), rng.randrange(N)))
    cells = sorted(cells)

ulp_off = 0
for i, j in cells:
    h = 0.0
    xo, wo = i * K, j * K
    for k in range(K):
        h += xpool[(xo + k) % PX] * wpool[(wo + k) % PW]
    v = gelu_tanh(h + bvals[j])
    ry, rz = bf16(v), f32(v)
    gy, gz = y[i * N + j], z[i * N + j]
    if gy != ry:
        if math.isnan(gy) or abs(bf16_bits(gy) - bf16_bits(ry)) > 1 or (gy < 0) != (ry < 0):
            sys.exit("check_mlp: y[%d, %d] = %r, expected %r" % (i, j, gy, ry))
        ulp_off += 1
    if not a.float64:  # z = cast of the stored bf16 y, as the GPU computes it
        continue
    if abs(gz - rz) > 4 * 2.0 ** -23 * max(abs(rz), 2.0 ** -10):
        sys.exit("check_mlp: z[%d, %d] = %r, expected %r" % (i, j, gz, rz))

# Every element: by default z is exactly y (the cast reads the stored bf16 y, as in the
# GPU's kernel); with --float64 y is exactly z rounded to bf16 (one value stored twice).
off = 0
for i in range(M * N):
    if not math.isfinite(y[i]) or not math.isfinite(z[i]):
        sys.exit("check_mlp: element %d is not finite: y %r z %r" % (i, y[i], z[i]))
    if y[i] != (bf16(z[i]) if a.float64 else z[i]):
        off += 1
relation = "y == bf16(z)" if a.float64 else "z == y"
if off:
    sys.exit("check_mlp: not %s for %d of %d elements" % (relation, off, M * N))
if ulp_off > max(1, len(cells) // 100):
    sys.exit("check_mlp: too many one-ulp differences (%d of %d checked)" % (ulp_off, len(cells)))
print("check_mlp: %d of %d elements recomputed, %d one-ulp bf16 differences; "
      "%s everywhere" % (len(cells), M * N, ulp_off, relation))
