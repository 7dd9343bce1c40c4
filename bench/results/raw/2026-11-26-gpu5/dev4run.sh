#!/bin/sh
# device call (2026-11-26 fifth session): the library's wgmma attention: lab, encoder tests (default =
# wgmma, and SPLADE_GPU_ATTN=mma), compute-sanitizer, splade-tiny on SciFact, build x20 mma vs wgmma.
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "[+$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a "$OUT/run.log"
SR=/opt/lm-sysroot; mkdir -p $SR && tar xzf .gpu/lm-sysroot.tar.gz -C $SR
L=$SR/usr/lib/x86_64-linux-gnu
export SPLADE_LD="$L:$L/openblas-pthread"
tar xzf tmp/dev4.tgz -C tmp; tar xzf tmp/tiny.tgz
mkdir -p .gpu/scifact && gunzip -c tmp/corpus.jsonl.gz > .gpu/scifact/corpus.jsonl
D=tmp/dev4
say "lab"
$D/lab/attention 2 4 5 6 7 > "$OUT/lab.txt" 2>&1; echo "lab rc $?" >> "$OUT/lab.txt"
for r in 1 2; do $D/lab/attention 2 7 --no-check --B 64 --S 256 >> "$OUT/lab.txt" 2>&1; done
$D/lab/attention 2 7 --no-check --B 16 --S 512 >> "$OUT/lab.txt" 2>&1
grep -E "^\| [0-9]|FAIL|rc |passed|FAILED" "$OUT/lab.txt" | head -40
for mode in default mma; do
  say "test_encoder_backends ($mode)"
  if [ $mode = mma ]; then export SPLADE_GPU_ATTN=mma; fi
  LD_LIBRARY_PATH=$SPLADE_LD SPLADE_TINY_TEST_DOCS=${DOCS:-1024} timeout 240 $D/tests/test_encoder_backends > "$OUT/tests_$mode.txt" 2>&1; echo "tests $mode rc $?" | tee -a "$OUT/run.log"
  unset SPLADE_GPU_ATTN
  grep -E "PASSED|FAILED|SKIPPED|gpu-bf16.*(rel-L2|top-50)|splade-tiny|tiny" "$OUT/tests_$mode.txt" | tail -14
done
for spec in "memcheck *" "racecheck test_long_sequences/gpu-bf16" "synccheck *"; do
  tool=${spec%% *}; flt=${spec#* }
  SPLADE_GPU_TEST_SMALL=1 SPLADE_TEST_FILTER="$flt" LD_LIBRARY_PATH=$SPLADE_LD timeout 200 \
    compute-sanitizer --tool $tool --error-exitcode 3 $D/tests/test_encoder_backends > "$OUT/san_$tool.txt" 2>&1
  echo "sanitizer $tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_$tool.txt" | tail -1)" | tee -a "$OUT/run.log"
done
say "pipeline builds"
PEER=.gpu/encode_peers.py TOK=.gpu/bert-base-uncased CORPUS=.gpu/scifact/corpus.jsonl WORK=/tmp/pw \
  BINS="mma=$D/mma wgmma=$D/new" R=20 ROUNDS=${ROUNDS:-3} ENCODE_ROUNDS=1 SKIP_PEER=1 OUT=$OUT sh bench/gpu_pipeline.sh > /dev/null 2>&1
grep -E "identical|^\|" "$OUT/pipeline.txt" | head -40
say "done"
