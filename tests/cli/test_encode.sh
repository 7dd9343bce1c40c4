#!/bin/sh
# splade-index encode end to end: TEXT and --input JSONL output (valid JSON, tokens as keys,
# top-k), a malformed line named by file:line (exit 1), a missing model naming the fetch
# command, usage errors (exit 2). Uses cache/rand-h96 (written by `make models` without network).
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
MODEL=$ROOT/cache/rand-h96
[ -f "$MODEL/model.safetensors" ] || { echo "SKIP: no model at $MODEL (run make models)"; exit 77; }
T=$(mktemp -d /tmp/splade_cli_encodeXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$BIN" encode --model "$MODEL" --device cpu "protein folding" "p53 apoptosis" > "$T/out.jsonl" 2> "$T/err" \
    || fail "encode TEXT: $(cat "$T/err")"
[ "$(wc -l < "$T/out.jsonl")" -eq 2 ] || fail "two texts gave $(wc -l < "$T/out.jsonl") lines"
head -1 "$T/out.jsonl" | grep -q '^{"id": "0", "vector": {"' || fail "format: $(head -1 "$T/out.jsonl")"
grep -q "encoding on the CPU" "$T/err" && fail "--device cpu printed a device notice"
if command -v python3 >/dev/null; then
    python3 -c '
import json, sys
vocab = set(open(sys.argv[2], encoding="utf-8").read().split("\n"))
for l in open(sys.argv[1], encoding="utf-8"):
    v = json.loads(l)["vector"]
    assert v and all(k in vocab and w > 0 for k, w in v.items()), l
' "$T/out.jsonl" "$MODEL/vocab.txt" || fail "not JSON with vocabulary tokens as keys"
fi

printf '{"_id": "a", "title": "T", "text": "cells"}\n\n{"id": 7, "contents": "x \\"y\\""}\n' > "$T/ok.jsonl"
"$BIN" encode --model "$MODEL" --device cpu --top-k 3 --input "$T/ok.jsonl" > "$T/ok.out" 2> "$T/err" \
    || fail "--input: $(cat "$T/err")"
[ "$(wc -l < "$T/ok.out")" -eq 2 ] || fail "--input lines: $(cat "$T/ok.out")"
sed -n 2p "$T/ok.out" | grep -q '^{"id": "7", ' || fail "integer id: $(cat "$T/ok.out")"
[ "$(head -1 "$T/ok.out" | grep -o '": [0-9]' | wc -l)" -eq 3 ] || fail "--top-k 3: $(head -1 "$T/ok.out")"

printf '{"_id": "a", "text": "fine"}\n{"_id": "b", "text": \n' > "$T/bad.jsonl"
"$BIN" encode --model "$MODEL" --device cpu --input "$T/bad.jsonl" > /dev/null 2> "$T/err"
[ $? -eq 1 ] || fail "malformed line: exit status not 1"
grep -q "bad.jsonl:2" "$T/err" || fail "malformed line not named: $(cat "$T/err")"

# Truncation is counted on stderr.
long=$(i=0; while [ $i -lt 300 ]; do printf 'word '; i=$((i + 1)); done)
"$BIN" encode --model "$MODEL" --device cpu --max-length 16 "$long" short > /dev/null 2> "$T/err" || fail "long text"
grep -q "1 of 2 texts truncated at 16 tokens" "$T/err" || fail "truncation count: $(cat "$T/err")"

SPLADE_CACHE=$T/nocache "$BIN" encode --model "$T/nope" x > /dev/null 2> "$T/err"
[ $? -eq 1 ] || fail "missing model: exit status"
grep -q "fetch-model" "$T/err" || fail "missing model message: $(cat "$T/err")"
(cd "$T" && SPLADE_MODEL= HOME=$T SPLADE_CACHE= "$BIN" encode x > /dev/null 2> "$T/err")
grep -q "make models" "$T/err" || fail "no default model message: $(cat "$T/err")"

# The output is formatted on worker threads in parts and written in order while the next chunk encodes
# (src/cli/vector_writer.c): the same bytes on 1 thread and on 4, over three chunks of 256 texts; a
# malformed line after two full chunks leaves exactly their 512 lines (the reader a chunk ahead drops
# the chunk it cut short); SPLADE_TIMINGS=1 logs one timings line, --quiet none.
awk 'BEGIN { srand(13); for (i = 0; i < 700; i++) { t = ""; n = 1 + int(rand() * 30);
    for (w = 0; w < n; w++) t = t (w ? " " : "") substr("cells protein folding apoptosis p53 gene", 1 + int(rand() * 30), 1 + int(rand() * 9));
    printf "{\"_id\": \"d%d\", \"text\": \"%s\"}\n", i, t } }' > "$T/many.jsonl"
"$BIN" encode --model "$MODEL" --device cpu --threads 1 --input "$T/many.jsonl" > "$T/t1.out" 2> "$T/err" || fail "--threads 1: $(cat "$T/err")"
"$BIN" encode --model "$MODEL" --device cpu --threads 4 --input "$T/many.jsonl" > "$T/t4.out" 2> "$T/err" || fail "--threads 4: $(cat "$T/err")"
[ "$(wc -l < "$T/t1.out")" -eq 700 ] || fail "700 texts gave $(wc -l < "$T/t1.out") lines"
cmp -s "$T/t1.out" "$T/t4.out" || fail "output differs between 1 and 4 threads"
{ head -600 "$T/many.jsonl"; echo '{"_id": broken'; tail -100 "$T/many.jsonl"; } > "$T/late.jsonl"
"$BIN" encode --model "$MODEL" --device cpu --input "$T/late.jsonl" > "$T/late.out" 2> "$T/err"
[ $? -eq 1 ] || fail "late malformed line: exit status not 1"
grep -q "late.jsonl:601" "$T/err" || fail "late malformed line not named: $(cat "$T/err")"
head -512 "$T/t1.out" | cmp -s - "$T/late.out" || fail "a malformed line at 601: not the first 512 vectors ($(wc -l < "$T/late.out") lines)"
# TEXT arguments beyond one chunk: handed to the writer in chunk-sized pieces, in order
"$BIN" encode --model "$MODEL" --device cpu $(seq 1 600 | sed 's/^/w/') > "$T/args.out" 2> "$T/err" || fail "600 TEXTs: $(cat "$T/err")"
[ "$(wc -l < "$T/args.out")" -eq 600 ] && tail -1 "$T/args.out" | grep -q '^{"id": "599", ' || fail "600 TEXTs: $(tail -1 "$T/args.out")"
SPLADE_TIMINGS=1 "$BIN" encode --model "$MODEL" --device cpu --input "$T/many.jsonl" > /dev/null 2> "$T/err" || fail "timings"
grep -Eq "^splade-index: timings \(encoder\): model_load [0-9.]+ .*tokenize [0-9.]+ .*output [0-9.]+( [a-z_]+ [0-9.]+)* s$" "$T/err" ||
    fail "SPLADE_TIMINGS=1: $(cat "$T/err")"
SPLADE_TIMINGS=1 "$BIN" encode --quiet --model "$MODEL" --device cpu x > /dev/null 2> "$T/err" || fail "timings --quiet"
[ ! -s "$T/err" ] || fail "--quiet printed: $(cat "$T/err")"

"$BIN" encode --model "$MODEL" > /dev/null 2>&1; [ $? -eq 2 ] || fail "no input: exit status not 2"
"$BIN" encode --model "$MODEL" --device tpu x > /dev/null 2>&1; [ $? -eq 2 ] || fail "bad --device not 2"
echo "ok"
