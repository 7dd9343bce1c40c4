#!/bin/sh
# --precision bf16|fp32|int8 on the commands that encode (build, encode, query): a bad value is a usage
# error (exit 2) naming the flag, before any model is loaded; on the CPU fp32 is the default (no
# flag and --precision fp32 give the very same vectors and index) and --precision bf16 is opt-in
# (issue #13): other vectors where the CPU has AMX / AVX512-BF16 (their tolerance is
# tests/test_encoder_cpu_bf16.c's), else a clear error, tested here by masking the CPU's features
# with $ONEDNN_MAX_CPU_ISA; --precision int8 likewise (VNNI / AMX-INT8; tolerance in
# tests/test_encoder_cpu_int8.c), CPU-only (--device cuda with it: an error on any machine). The GPU side of fp32 is tested by tests/test_encoder_backends.c (gpu-fp32). Uses cache/rand-h96 (written by `make models`).
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
T=$(mktemp -d /tmp/splade_cli_precisionXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# bad values: exit 2 and a message naming --precision (no model needed: rejected while parsing)
for cmd in "encode x" "build $ROOT/data/example/corpus.jsonl -o $T/bad.idx" "query x -i $T/bad.idx"; do
    for v in fp16 BF16 "" 32; do
        # shellcheck disable=SC2086
        "$BIN" $cmd --precision "$v" > /dev/null 2> "$T/err"
        rc=$?
        [ $rc -eq 2 ] || fail "$cmd --precision '$v': exit status $rc, not 2"
        grep -q -- "--precision must be bf16, fp32 or int8" "$T/err" || fail "$cmd --precision '$v': $(cat "$T/err")"
    done
done
[ -e "$T/bad.idx" ] && fail "a rejected build wrote an index"
"$BIN" encode --help | grep -q -- "--precision bf16|fp32|int8" || fail "encode --help lacks --precision"
"$BIN" build --help | grep -q -- "--precision bf16|fp32|int8" || fail "build --help lacks --precision"
"$BIN" query --help | grep -q -- "--precision bf16|fp32|int8" || fail "query --help lacks --precision"

MODEL=$ROOT/cache/rand-h96
[ -f "$MODEL/model.safetensors" ] || { echo "SKIP: no model at $MODEL (run make models)"; exit 77; }

# on the CPU: fp32 is the default, bit for bit
"$BIN" encode --model "$MODEL" --device cpu "protein folding" "p53 apoptosis" > "$T/none.jsonl" \
    || fail "encode without --precision"
"$BIN" encode --model "$MODEL" --device cpu --precision fp32 "protein folding" "p53 apoptosis" > "$T/fp32.jsonl" \
    2> "$T/err" || fail "encode --precision fp32: $(cat "$T/err")"
cmp -s "$T/none.jsonl" "$T/fp32.jsonl" || fail "--precision fp32 changed the CPU vectors"
# bf16 (opt-in): other vectors, or a clear error where the CPU (or the build) cannot
if "$BIN" encode --model "$MODEL" --device cpu --precision bf16 "protein folding" "p53 apoptosis" \
    > "$T/bf16.jsonl" 2> "$T/err"; then
    cmp -s "$T/none.jsonl" "$T/bf16.jsonl" && fail "--precision bf16 on the CPU gave the fp32 vectors"
    grep -q '"vector"' "$T/bf16.jsonl" || fail "--precision bf16: no vectors"
else
    grep -q "needs" "$T/err" || fail "--precision bf16 failed without saying why: $(cat "$T/err")"
    echo "note: no bf16 on this CPU/build: $(cat "$T/err")"
fi
# a CPU without AVX512-BF16 / AMX (features masked): exit 1 and a message naming what is missing
ONEDNN_MAX_CPU_ISA=AVX2 "$BIN" encode --model "$MODEL" --device cpu --precision bf16 "protein folding" \
    > /dev/null 2> "$T/err" && fail "--precision bf16 ran with the CPU's bf16 features masked"
grep -q -- "--precision bf16 on the CPU needs" "$T/err" || fail "masked CPU: $(cat "$T/err")"
# int8 (opt-in, CPU only): other vectors where the CPU has VNNI, else a clear error
if "$BIN" encode --model "$MODEL" --device cpu --precision int8 "protein folding" "p53 apoptosis" \
    > "$T/int8.jsonl" 2> "$T/err"; then
    cmp -s "$T/none.jsonl" "$T/int8.jsonl" && fail "--precision int8 on the CPU gave the fp32 vectors"
    grep -q '"vector"' "$T/int8.jsonl" || fail "--precision int8: no vectors"
    "$BIN" encode --model "$MODEL" --device auto --precision int8 --quiet "protein folding" "p53 apoptosis" \
        > "$T/int8auto.jsonl" 2> "$T/err" || fail "--device auto --precision int8: $(cat "$T/err")"
    cmp -s "$T/int8.jsonl" "$T/int8auto.jsonl" || fail "--device auto --precision int8 did not encode on the CPU"
else
    grep -q "needs" "$T/err" || fail "--precision int8 failed without saying why: $(cat "$T/err")"
    echo "note: no int8 on this CPU/build: $(cat "$T/err")"
fi
# a CPU without VNNI (AVX-512 without VNNI: features masked): exit 1, a message naming VNNI
ONEDNN_MAX_CPU_ISA=AVX512_CORE "$BIN" encode --model "$MODEL" --device cpu --precision int8 "protein folding" \
    > /dev/null 2> "$T/err" && fail "--precision int8 ran with the CPU's VNNI masked"
grep -q -- "--precision int8 on the CPU needs VNNI" "$T/err" || grep -q -- "--precision int8 on the CPU needs oneDNN" \
    "$T/err" || fail "masked VNNI: $(cat "$T/err")"
# int8 is CPU-only: --device cuda with it is an error (exit 1) on every machine
"$BIN" encode --model "$MODEL" --device cuda --precision int8 "protein folding" > /dev/null 2> "$T/err" \
    && fail "--device cuda --precision int8 ran"
grep -q "CPU only" "$T/err" || fail "--device cuda --precision int8: $(cat "$T/err")"

DATA=$ROOT/data/example
"$BIN" build "$DATA/corpus.jsonl" -o "$T/a.idx" --model "$MODEL" --device cpu --quiet || fail "build"
"$BIN" build "$DATA/corpus.jsonl" -o "$T/b.idx" --model "$MODEL" --device cpu --precision fp32 --quiet \
    || fail "build --precision fp32"
"$BIN" query -i "$T/a.idx" --queries "$DATA/queries.jsonl" -k 20 -o "$T/a.trec" || fail "query"
"$BIN" query -i "$T/b.idx" --queries "$DATA/queries.jsonl" -k 20 --device cpu --precision fp32 -o "$T/b.trec" \
    || fail "query --precision fp32"
cmp -s "$T/a.trec" "$T/b.trec" || fail "--precision fp32 on the CPU changed the run"
echo "ok"
