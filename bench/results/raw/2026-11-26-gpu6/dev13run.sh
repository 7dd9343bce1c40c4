#!/bin/sh
# device call 2 (2026-11-26, sixth session): cuBLASLt candidates timed at tuning, 8 (main) against
# 32 and 128 (SPLADE_EXP_GEMM_CAND), whole build x20, alternating rounds; then ncu split for the best.
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "[+$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/run.log"
SR=/opt/lm-sysroot; mkdir -p $SR && tar xzf .gpu/lm-sysroot.tar.gz -C $SR
L=$SR/usr/lib/x86_64-linux-gnu
export SPLADE_LD="$L:$L/openblas-pthread"
tar xzf tmp/dev13.tgz -C tmp; D=tmp/dev13
mkdir -p .gpu/scifact && gunzip -c tmp/corpus.jsonl.gz > .gpu/scifact/corpus.jsonl
say "model + corpus"
PEER=.gpu/encode_peers.py TOK=.gpu/bert-base-uncased CORPUS=.gpu/scifact/corpus.jsonl WORK=/tmp/pw \
  BINS="now=$D" R=20 ROUNDS=1 SKIP_ENCODE=1 SKIP_PEER=1 OUT=$OUT/warm sh bench/gpu_pipeline.sh > /dev/null 2>&1
grep -E "build x20" "$OUT/warm/pipeline.txt"
for r in 1 2 3; do
  for c in 8 32 128; do
    rm -rf /tmp/pw/idx_c
    t0=$(date +%s.%N)
    SPLADE_EXP_GEMM_LOG=1 SPLADE_EXP_GEMM_CAND=$c SPLADE_TIMINGS=1 LD_LIBRARY_PATH=$SPLADE_LD $D/splade-index build /tmp/pw/corpus_x20.jsonl --model /tmp/pw/bert-base-splade --device cuda -o /tmp/pw/idx_c > /dev/null 2> "$OUT/b_${c}_$r.err"
    rc=$?; t1=$(date +%s.%N)
    echo "round $r cand $c: $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.2f", b-a}') s rc $rc $(grep -o 'gpu_wait [0-9.]*' $OUT/b_${c}_$r.err | head -1) $(grep -o 'gpu_plan [0-9.]*' $OUT/b_${c}_$r.err | head -1)" | tee -a "$OUT/cand.txt"
  done
done
grep "gemm tune" "$OUT/b_128_1.err" "$OUT/b_8_1.err"
say "done"
