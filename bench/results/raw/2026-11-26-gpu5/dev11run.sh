#!/bin/sh
# device call (2026-11-26 fifth session, review of the whole change): the shared wgmma probe, the P
# fragment helper and the namespace clean-up of the wgmma attention: tests, lab,
# compute-sanitizer, and bit-identity of the x4 build against the binary before this review (dev8/new).
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "[+$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/run.log"
SR=/opt/lm-sysroot; mkdir -p $SR && tar xzf .gpu/lm-sysroot.tar.gz -C $SR
L=$SR/usr/lib/x86_64-linux-gnu
export SPLADE_LD="$L:$L/openblas-pthread"
tar xzf tmp/dev8.tgz -C tmp; tar xzf tmp/dev11.tgz -C tmp
mkdir -p .gpu/scifact && gunzip -c tmp/corpus.jsonl.gz > .gpu/scifact/corpus.jsonl
D=tmp/dev11
$D/lab/attention 2 7 > "$OUT/lab_attn.txt" 2>&1; echo "lab attention rc $?"; grep -E "^\| [0-9]" "$OUT/lab_attn.txt"
$D/lab/lmhead_fused 5 7 > "$OUT/lab_lmhead.txt" 2>&1; echo "lab lmhead rc $?"; grep -E "^\| [0-9B]|passed|FAIL" "$OUT/lab_lmhead.txt" | head -12
for t in test_lmhead_backends test_encoder_backends; do
  LD_LIBRARY_PATH=$SPLADE_LD timeout 240 $D/tests/$t > "$OUT/$t.txt" 2>&1; echo "$t rc $? $(grep -E 'PASSED|FAILED' $OUT/$t.txt | tail -2 | tr '\n' ' ')"
done
SPLADE_GPU_ATTN=mma SPLADE_GPU_TEST_SMALL=1 SPLADE_TEST_FILTER='*/gpu-bf16' LD_LIBRARY_PATH=$SPLADE_LD timeout 90 $D/tests/test_encoder_backends > "$OUT/mma.txt" 2>&1; echo "encoder mma rc $?"
for spec in "memcheck test_lmhead_backends *" "memcheck test_encoder_backends *" "racecheck test_encoder_backends test_long_sequences/gpu-bf16" "racecheck test_lmhead_backends */gpu-bf16"; do
  set -f; set -- $spec; set +f
  SPLADE_LMHEAD_TEST_SMALL=1 SPLADE_GPU_TEST_SMALL=1 SPLADE_TEST_FILTER="$3" LD_LIBRARY_PATH=$SPLADE_LD timeout 200 \
    compute-sanitizer --tool $1 --error-exitcode 3 $D/tests/$2 > "$OUT/san.txt" 2>&1
  echo "sanitizer $1 $2 rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san.txt" | tail -1)"
done
say "identity: x4 build, tuning off, before this review vs now"
PEER=.gpu/encode_peers.py TOK=.gpu/bert-base-uncased CORPUS=.gpu/scifact/corpus.jsonl WORK=/tmp/pw \
  BINS="pre=tmp/dev8/new now=$D/new" R=4 ROUNDS=1 SKIP_ENCODE=1 SKIP_PEER=1 OUT=$OUT sh bench/gpu_pipeline.sh > /dev/null 2>&1
grep -E "identical|^\|" "$OUT/pipeline.txt" | head -12
say "done"
