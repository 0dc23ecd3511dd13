"""Writes a large .kf graph to stdout for the scale edge tests (issue 22).

  gen_scale.py chain N      an N-op elementwise chain on one input (tanh and add alternate)
  gen_scale.py consumers N  N consumers of one input, each a graph output
  gen_scale.py outputs N    an N-op chain whose every value is a graph output
  gen_scale.py wide N       N inputs, each read by one op of a sum chain (N inputs, 1 output)
"""
import sys

kind, n = sys.argv[1], int(sys.argv[2])
out = [f"graph {kind} {{", "  %x = input f32[1024]"]
outputs = []
if kind in ("chain", "outputs"):
    prev = "%x"
    for i in range(n):
        op = f"tanh {prev}" if i % 2 == 0 else f"add {prev}, %x"
        out.append(f"  %v{i} = {op}")
        prev = f"%v{i}"
        if kind == "outputs":
            outputs.append(prev)
    if kind == "chain":
        outputs.append(prev)
elif kind == "consumers":
    for i in range(n):
        out.append(f"  %c{i} = mul %x, {i + 2}")
        outputs.append(f"%c{i}")
elif kind == "wide":
    out += [f"  %i{i} = input f32[1024]" for i in range(n)]
    prev = "%x"
    for i in range(n):
        out.append(f"  %s{i} = add {prev}, %i{i}")
        prev = f"%s{i}"
    outputs.append(prev)
else:
    sys.exit(f"unknown kind {kind}")
out.append("  output " + ", ".join(outputs))
out.append("}")
sys.stdout.write("\n".join(out) + "\n")
