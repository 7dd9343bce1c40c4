#!/bin/sh
# device call (2026-11-26, sixth session): the GPU's idle time between a build's batches
# (experiment-only event probe, SPLADE_EXP_GAPS), build x20.
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
SR=/opt/lm-sysroot; mkdir -p $SR && tar xzf .gpu/lm-sysroot.tar.gz -C $SR
L=$SR/usr/lib/x86_64-linux-gnu
export SPLADE_LD="$L:$L/openblas-pthread"
tar xzf tmp/dev14.tgz -C tmp; D=tmp/dev14
mkdir -p .gpu/scifact && gunzip -c tmp/corpus.jsonl.gz > .gpu/scifact/corpus.jsonl
which nsys || echo "no nsys"
PEER=.gpu/encode_peers.py TOK=.gpu/bert-base-uncased CORPUS=.gpu/scifact/corpus.jsonl WORK=/tmp/pw \
  BINS="now=$D" R=20 ROUNDS=1 SKIP_ENCODE=1 SKIP_PEER=1 OUT=$OUT/warm sh bench/gpu_pipeline.sh > /dev/null 2>&1
grep -E "build x20" "$OUT/warm/pipeline.txt"
for r in 1 2; do
  rm -rf /tmp/pw/idx_g
  t0=$(date +%s.%N)
  SPLADE_EXP_GAPS=1 SPLADE_TIMINGS=1 LD_LIBRARY_PATH=$SPLADE_LD $D/splade-index build /tmp/pw/corpus_x20.jsonl --model /tmp/pw/bert-base-splade --device cuda -o /tmp/pw/idx_g > /dev/null 2> "$OUT/g_$r.err"
  t1=$(date +%s.%N)
  echo "round $r: $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.2f", b-a}') s"; grep -E "gaps" "$OUT/g_$r.err" | tail -2; grep timings "$OUT/g_$r.err" | head -1
done
