#!/usr/bin/env bash
# The main job on one graph: optimise it, show why each fusion was or was not made, print
# the traffic report before and after fusion, generate and compile its kernels (dumped to
# build/kernels/<graph>/); with a GPU it also runs them, checks them against the reference
# interpreter and times them.  Usage: tools/demo.sh [GRAPH.kf]   (default: the MLP example)
set -euo pipefail
cd "$(dirname "$0")/.."
g=${1:-examples/graphs/mlp.kf}
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
if $kf run --has-gpu >/dev/null 2>&1; then
  echo "== kfuse run $g --random 1 --check --bench"
  $kf run "$g" --random 1 --check --bench
else
  echo "== no CUDA device here: kernels compiled and dumped, not run"
fi
