#!/bin/sh
# device call 2 (2026-11-26 fifth session): attention v4 (library) in the lab, the encoder tests,
# compute-sanitizer on the long sequences, and build x20 base vs new (and new at --batch 256).
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "[+$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee -a "$OUT/run.log"
SR=/opt/lm-sysroot; mkdir -p $SR && tar xzf .gpu/lm-sysroot.tar.gz -C $SR && tar xzf tmp/dnnl_lib.tgz -C $SR
L=$SR/usr/lib/x86_64-linux-gnu
export SPLADE_LD="$L:$L/openblas-pthread"
tar xzf tmp/dev1b.tgz -C tmp; tar xzf tmp/dev2.tgz -C tmp
mkdir -p .gpu/scifact && gunzip -c tmp/corpus.jsonl.gz > .gpu/scifact/corpus.jsonl
D=tmp/dev2
say "lab"
$D/lab/attention 2 3 4 > "$OUT/lab.txt" 2>&1; echo "lab rc $?" >> "$OUT/lab.txt"
for r in 1 2; do $D/lab/attention 2 4 --no-check --B 64 --S 256 >> "$OUT/lab.txt" 2>&1; done
$D/lab/attention 2 4 --no-check --B 16 --S 512 >> "$OUT/lab.txt" 2>&1
grep -E "^\| [0-9]| FAIL|rc |passed|FAILED" "$OUT/lab.txt"
say "test_encoder_backends (new)"
LD_LIBRARY_PATH=$SPLADE_LD timeout 200 $D/tests/test_encoder_backends > "$OUT/tests.txt" 2>&1; echo "tests rc $?" | tee -a "$OUT/run.log"
grep -E "PASSED|FAILED|SKIPPED|rel-L2" "$OUT/tests.txt" | tail -25
for spec in "memcheck *" "racecheck test_long_sequences/gpu-bf16"; do
  tool=${spec%% *}; flt=${spec#* }
  SPLADE_GPU_TEST_SMALL=1 SPLADE_TEST_FILTER="$flt" LD_LIBRARY_PATH=$SPLADE_LD timeout 200 \
    compute-sanitizer --tool $tool --error-exitcode 3 $D/tests/test_encoder_backends > "$OUT/san_$tool.txt" 2>&1
  echo "sanitizer $tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_$tool.txt" | tail -1)" | tee -a "$OUT/run.log"
done
say "ncu v4"
timeout 100 ncu --section SpeedOfLight --section Occupancy --section SchedulerStats --section WarpStateStats -k regex:attn_kernel -s 2 -c 1 \
  $D/lab/attention 4 --no-check --B 64 --S 256 --reps 2 > "$OUT/ncu_v4.txt" 2>&1
grep -E "Duration|Issued Warp|No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Compute \(SM\)" "$OUT/ncu_v4.txt"
say "pipeline builds"
PEER=.gpu/encode_peers.py TOK=.gpu/bert-base-uncased CORPUS=.gpu/scifact/corpus.jsonl WORK=/tmp/pw \
  BINS="base=tmp/dev1/bin new=$D/new new256=$D/new256" R=20 ROUNDS=${ROUNDS:-2} ENCODE_ROUNDS=1 SKIP_PEER=1 OUT=$OUT sh bench/gpu_pipeline.sh > /dev/null 2>&1
grep -E "identical|^\|" "$OUT/pipeline.txt" | head -40
say "done"
