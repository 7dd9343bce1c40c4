#!/bin/sh
# device call: the residual in the GEMM epilogue (res) against wgmma-only (wg: dev4/new), tests + sanitizer
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "[+$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/run.log"
SR=/opt/lm-sysroot; mkdir -p $SR && tar xzf .gpu/lm-sysroot.tar.gz -C $SR
L=$SR/usr/lib/x86_64-linux-gnu
export SPLADE_LD="$L:$L/openblas-pthread"
tar xzf tmp/dev4.tgz -C tmp; tar xzf tmp/dev5.tgz -C tmp; tar xzf tmp/tiny.tgz
mkdir -p .gpu/scifact && gunzip -c tmp/corpus.jsonl.gz > .gpu/scifact/corpus.jsonl
D=tmp/dev5
say "test_encoder_backends (res)"
LD_LIBRARY_PATH=$SPLADE_LD timeout 240 $D/tests/test_encoder_backends > "$OUT/tests.txt" 2>&1; echo "tests rc $?" | tee -a "$OUT/run.log"
grep -E "PASSED|FAILED|gpu-bf16.*(rel-L2|top-50)|splade-tiny" "$OUT/tests.txt" | tail -12
SPLADE_GPU_POISON=1 SPLADE_GPU_TEST_SMALL=1 SPLADE_TEST_FILTER='*/gpu-bf16' LD_LIBRARY_PATH=$SPLADE_LD timeout 120 $D/tests/test_encoder_backends > "$OUT/poison.txt" 2>&1; echo "poisoned rc $?" | tee -a "$OUT/run.log"
SPLADE_GPU_SMALL_GEMM=0 SPLADE_GPU_TEST_SMALL=1 SPLADE_TEST_FILTER='*/gpu-bf16' LD_LIBRARY_PATH=$SPLADE_LD timeout 120 $D/tests/test_encoder_backends > "$OUT/nosmall.txt" 2>&1; echo "small-gemm 0 rc $?" | tee -a "$OUT/run.log"
SPLADE_GPU_TEST_SMALL=1 SPLADE_TEST_FILTER='*' LD_LIBRARY_PATH=$SPLADE_LD timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 $D/tests/test_encoder_backends > "$OUT/san_memcheck.txt" 2>&1
echo "memcheck rc $? $(grep -E 'ERROR SUMMARY' "$OUT/san_memcheck.txt" | tail -1)" | tee -a "$OUT/run.log"
say "pipeline builds"
PEER=.gpu/encode_peers.py TOK=.gpu/bert-base-uncased CORPUS=.gpu/scifact/corpus.jsonl WORK=/tmp/pw \
  BINS="${BINS:-wg=tmp/dev4/new res=$D/res}" R=20 ROUNDS=${ROUNDS:-3} ENCODE_ROUNDS=1 SKIP_PEER=1 OUT=$OUT sh bench/gpu_pipeline.sh > /dev/null 2>&1
grep -E "identical|^\|" "$OUT/pipeline.txt" | head -40
grep -h timings "$OUT"/build-*.stderr
say "done"
