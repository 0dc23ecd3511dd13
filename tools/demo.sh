#!/usr/bin/env bash
# The main job on one graph: optimise it, show why each fusion was or was not made, print
# the traffic report before and after fusion, generate and compile its kernels (dumped to
# build/kernels/<graph>/); with a GPU it also runs them, checks them against the reference
# interpreter and times them.  Usage: tools/demo.sh [GRAPH.kf]
# (default: gelu_tanh(x*a+b) on bf16 [65536, 4096])
set -euo pipefail
cd "$(dirname "$0")/.."
g=${1:-examples/graphs/gelu_bias.kf}
k=bin/kfuse
kf=build/$k
name=$(basename "$g" .kf)

echo "== kfuse opt -O2 --explain-fusion $g"
$kf opt -O2 --explain-fusion "$g"
echo
echo "== kfuse report $g --device h200"
$kf report "$g" --device h200
echo
echo "== kfuse compile $g --dump-kernels build/kernels/$name"
$kf compile "$g" --dump-kernels "build/kernels/$name"
ls -l "build/kernels/$name"
echo
if [ -e /dev/nvidiactl ]; then # a GPU (its driver) is present
  echo "== kfuse run $g --check --bench"
  $kf run "$g" --check --bench
else
  echo "== kfuse run $g --check --bench: skipped, no GPU on this machine"
  echo "   (on one it runs the kernels as one CUDA graph, checks them against the reference"
  echo "   interpreter and times each kernel against a device copy)"
fi
