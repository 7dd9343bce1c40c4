#!/bin/sh
# query --queries when the query model cannot be used (a --model typo, an index built from
# --vectors, another model's fingerprint, the index's recorded model folder gone) or the queries
# file repeats an id: an error naming the cause, exit 1, no crash and no run file; -k larger than
# the index is capped (it used to allocate n_queries x k hits and fail "out of memory").
# Needs the real model (splade-tiny); exit 77 when it is not fetched.
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
MODEL=${SPLADE_MODEL:-$ROOT/cache/splade-tiny}
[ -f "$MODEL/model.safetensors" ] || { echo "SKIP: no model at $MODEL (run make models)"; exit 77; }
unset SPLADE_MODEL SPLADE_INDEX
T=$(mktemp -d /tmp/splade_cli_qbatchXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
DATA=$ROOT/data/example
Q=$DATA/queries.jsonl

# expect_error NAME PATTERN CMD...: exit 1 (not a signal), PATTERN on stderr, no r.trec
expect_error() {
    name=$1 pattern=$2
    shift 2
    rm -f "$T/r.trec"
    "$@" > "$T/out" 2> "$T/err"
    rc=$?
    [ $rc -eq 1 ] || fail "$name: exit $rc (want 1): $(cat "$T/err")"
    grep -q -- "$pattern" "$T/err" || fail "$name: message: $(cat "$T/err")"
    [ ! -e "$T/r.trec" ] || fail "$name: left a run file"
}

cp -r "$MODEL" "$T/model"
"$BIN" build "$DATA/corpus.jsonl" -o "$T/idx" --model "$T/model" --device cpu --quiet || fail "build"
"$BIN" query -i "$T/idx" --queries "$Q" -k 5 -o "$T/before.trec" || fail "batch before"

expect_error "--model typo" 'not found: model "/nonexistent" not found (tried /nonexistent)' \
    "$BIN" query --queries "$Q" --output "$T/r.trec" -i "$T/idx" --model /nonexistent

"$BIN" encode --input "$DATA/corpus.jsonl" --model "$MODEL" --device cpu --quiet > "$T/vec.jsonl" || fail "encode"
"$BIN" build --vectors "$T/vec.jsonl" -o "$T/vidx" --quiet || fail "build --vectors"
expect_error "text queries on a --vectors index" "built from precomputed vectors (no model): query it with --vector-queries" \
    "$BIN" query --queries "$Q" --output "$T/r.trec" -i "$T/vidx"

printf '{"do_lower_case": false}\n' > "$T/model/tokenizer_config.json"
expect_error "fingerprint mismatch" "mismatch: the index was built with model .* rebuild the index or pass the right --model" \
    "$BIN" query --queries "$Q" --output "$T/r.trec" -i "$T/idx"
cp "$MODEL/tokenizer_config.json" "$T/model/tokenizer_config.json"

# the recorded folder is gone and no --model was given: the message says the index named it
mv "$T/model" "$T/moved"
expect_error "recorded model gone" "the index's model is gone (it records folder \"$T/model\"" \
    env HOME="$T" "$BIN" query --queries "$Q" --output "$T/r.trec" -i "$T/idx"
grep -q -- "--model;" "$T/err" && fail "names --model though none was given: $(cat "$T/err")"
mv "$T/moved" "$T/model"

# a repeated query id: FILE:LINE of both, for text and for vector queries
{ head -2 "$Q"; head -1 "$Q"; } > "$T/dup.jsonl"
expect_error "duplicate text query id" "dup.jsonl:3: duplicate query id \"q1\" (first on $T/dup.jsonl:1)" \
    "$BIN" query --queries "$T/dup.jsonl" --output "$T/r.trec" -i "$T/idx"
{ head -1 "$T/vec.jsonl"; head -1 "$T/vec.jsonl"; } > "$T/vdup.jsonl"
expect_error "duplicate vector query id" "vdup.jsonl:2: duplicate query id .* (first on $T/vdup.jsonl:1)" \
    "$BIN" query --vector-queries "$T/vdup.jsonl" --output "$T/r.trec" -i "$T/vidx"

# after all that, the index answers as before
"$BIN" query -i "$T/idx" --queries "$Q" -k 5 -o "$T/after.trec" || fail "batch after"
cmp -s "$T/before.trec" "$T/after.trec" || fail "the index answers differently"

# -k beyond the index's size: capped at its 40 documents, no giant allocation
"$BIN" query -i "$T/idx" --queries "$Q" -k 2000000000 -o "$T/all.trec" 2> "$T/err" || fail "-k 2e9: $(cat "$T/err")"
[ "$(awk '{print $1}' "$T/all.trec" | sort | uniq -c | awk '$1 > 40' | wc -l)" -eq 0 ] || fail "more than 40 hits per query"
"$BIN" query -i "$T/idx" --queries "$Q" -k 40 -o "$T/k40.trec" || fail "-k 40"
cmp -s "$T/all.trec" "$T/k40.trec" || fail "-k 2e9 differs from -k 40 (the document count)"
"$BIN" query -i "$T/idx" "volcano" -k 2000000000 > "$T/one.out" || fail "single -k 2e9"
[ "$(wc -l < "$T/one.out")" -le 40 ] || fail "single query: more hits than documents"
exit 0
