#!/bin/sh
# A failed write to standard output (here /dev/full: ENOSPC on every write) is an error for every
# command: exit 1 and a message naming standard output, never exit 0 with truncated output. A run
# file (--output) that cannot be written is removed rather than left truncated. Commands that need
# the model (encode, build, query TEXT) are skipped without it; the rest always run.
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
[ -w /dev/full ] || { echo "SKIP: no /dev/full"; exit 77; }
MODEL=${SPLADE_MODEL:-$ROOT/cache/splade-tiny}
unset SPLADE_MODEL SPLADE_INDEX
T=$(mktemp -d /tmp/splade_cli_stdoutXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
DATA=$ROOT/data/example

# full NAME CMD...: run with stdout on /dev/full (stdin from $T/in when it exists)
full() {
    name=$1
    shift
    if [ -e "$T/in" ]; then "$@" < "$T/in" > /dev/full 2> "$T/err"; else "$@" > /dev/full 2> "$T/err"; fi
    rc=$?
    [ $rc -eq 1 ] || fail "$name: exit $rc (want 1) with stdout on /dev/full: $(cat "$T/err")"
    grep -q "input/output error: writing standard output: No space left on device" "$T/err" ||
        fail "$name: message: $(cat "$T/err")"
}

# a closed standard output with nothing written to it is not an error (coreutils' rule)...
"$BIN" --help > /dev/null || fail "--help"
"$BIN" eval --run /nonexistent --qrels /nonexistent >&- 2> "$T/err"
[ $? -eq 1 ] && grep -q "nonexistent" "$T/err" && ! grep -q "standard output" "$T/err" ||
    fail "closed stdout, nothing written: $(cat "$T/err")"
# ...but output that cannot go anywhere is
"$BIN" --version >&- 2> "$T/err" && fail "--version into a closed stdout succeeded"
grep -q "writing standard output: Bad file descriptor" "$T/err" || fail "closed stdout: $(cat "$T/err")"

full "--help" "$BIN" --help
full "--version" "$BIN" --version
full "query --help" "$BIN" query --help
full "bench-lmhead --help" "$BIN" bench-lmhead --help
VOCAB=$MODEL/vocab.txt
[ -f "$VOCAB" ] || VOCAB=$ROOT/../shared/data/bert-base-uncased/vocab.txt
if [ -f "$VOCAB" ]; then
    full "tokenize TEXT" "$BIN" tokenize --vocab "$VOCAB" hello world
    # a long standard input: stops at the first failed write instead of reading it all
    awk 'BEGIN { for (i = 0; i < 20000; i++) print "the quick brown fox jumps over the lazy dog" }' > "$T/in"
    full "tokenize < stdin" "$BIN" tokenize --vocab "$VOCAB"
    rm -f "$T/in"
fi

# vectors index: query (batch to stdout and to a full --output), eval
printf '{"id": "d1", "vector": {"cat": 1.5, "dog": 0.5}}\n{"id": "d2", "vector": {"dog": 2.0}}\n' > "$T/v.jsonl"
printf '{"id": "q1", "vector": {"dog": 1.0}}\n' > "$T/q.jsonl"
"$BIN" build --vectors "$T/v.jsonl" -o "$T/vidx" --quiet || fail "build --vectors"
full "build --vectors summary" "$BIN" build --vectors "$T/v.jsonl" -o "$T/vidx2"
"$BIN" query -i "$T/vidx2" --vector-queries "$T/q.jsonl" > /dev/null || fail "the index written before the summary failed"
full "query --vector-queries" "$BIN" query -i "$T/vidx" --vector-queries "$T/q.jsonl"
"$BIN" query -i "$T/vidx" --vector-queries "$T/q.jsonl" -o /dev/full 2> "$T/err" && fail "--output /dev/full accepted"
grep -q "/dev/full: write failed: No space left on device" "$T/err" || fail "--output message: $(cat "$T/err")"
[ -c /dev/full ] || fail "/dev/full is gone"
"$BIN" query -i "$T/vidx" --vector-queries "$T/q.jsonl" -o "$T/run.trec" || fail "batch"
printf 'q1 0 d2 1\n' > "$T/qrels"
full "eval" "$BIN" eval --run "$T/run.trec" --qrels "$T/qrels"
full "eval --json" "$BIN" eval --run "$T/run.trec" --qrels "$T/qrels" --json

if [ ! -f "$MODEL/model.safetensors" ]; then
    echo "SKIP (partly): no model at $MODEL: encode, build and query TEXT not checked"
    exit 0
fi
full "encode TEXT" "$BIN" encode --model "$MODEL" --device cpu --quiet "a text" "another"
full "encode --input" "$BIN" encode --model "$MODEL" --device cpu --quiet --input "$DATA/corpus.jsonl"
full "build summary" "$BIN" build "$DATA/corpus.jsonl" -o "$T/idx" --model "$MODEL" --device cpu
full "query TEXT" "$BIN" query -i "$T/idx" "why do earthquakes happen"
full "query TEXT --json" "$BIN" query -i "$T/idx" "why do earthquakes happen" --json
full "query --queries" "$BIN" query -i "$T/idx" --queries "$DATA/queries.jsonl"
exit 0
