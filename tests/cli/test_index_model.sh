#!/bin/sh
# End-to-end with the real model (splade-tiny; skipped, exit 77, when it is not fetched): build
# data/example, query it (text, JSON, batch with threads), evaluate the bundled qrels, refuse a
# query whose model differs from the index's, and run the README's demo (tools/demo.sh).
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
MODEL=${SPLADE_MODEL:-$ROOT/cache/splade-tiny}
[ -f "$MODEL/model.safetensors" ] || { echo "SKIP: no model at $MODEL (run make models)"; exit 77; }
T=$(mktemp -d /tmp/splade_cli_modelXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
DATA=$ROOT/data/example

"$BIN" build "$DATA/corpus.jsonl" -o "$T/idx" --model "$MODEL" --device cpu > "$T/build.out" 2>&1 || fail "build: $(cat "$T/build.out")"
grep -q "indexed 40 documents, .* 0 truncated, 0 invalid lines skipped" "$T/build.out" || fail "summary: $(cat "$T/build.out")"
"$BIN" query -i "$T/idx" "why do earthquakes happen" -k 3 > "$T/q.out" || fail "query"
head -1 "$T/q.out" | grep -q " geo-2  Plate tectonics" || fail "top hit: $(cat "$T/q.out")"
[ "$(wc -l < "$T/q.out")" -eq 3 ] || fail "-k 3 gave $(wc -l < "$T/q.out") lines"
"$BIN" query -i "$T/idx" "espresso coffee" -k 2 --json > "$T/q.json" || fail "json"
grep -q '"id": "cook-2"' "$T/q.json" || fail "json: $(cat "$T/q.json")"
grep -q '"query": "espresso coffee"' "$T/q.json" || fail "json query"

"$BIN" query -i "$T/idx" --queries "$DATA/queries.jsonl" -k 100 --threads 1 -o "$T/run1.trec" || fail "batch"
"$BIN" query -i "$T/idx" --queries "$DATA/queries.jsonl" -k 100 --threads 2 -o "$T/run2.trec" || fail "batch 2 threads"
cmp -s "$T/run1.trec" "$T/run2.trec" || fail "thread count changed the run"
[ "$(cut -d' ' -f1 "$T/run1.trec" | sort -u | wc -l)" -eq 8 ] || fail "run lacks queries"
"$BIN" eval --run "$T/run1.trec" --qrels "$DATA/qrels.tsv" --json > "$T/eval.json" || fail "eval"
awk -F'"ndcg@10": ' '{ split($2, a, ","); exit !(a[1] >= 0.9) }' "$T/eval.json" || fail "ndcg@10 < 0.9: $(cat "$T/eval.json")"

# the index records its model: another model (different fingerprint) is refused
cp -r "$MODEL" "$T/model"
"$BIN" build "$DATA/corpus.jsonl" -o "$T/idx2" --model "$T/model" --device cpu --quiet || fail "build idx2"
"$BIN" query -i "$T/idx2" "volcano" -k 1 > "$T/before.out" || fail "query idx2"
printf '{"do_lower_case": false}\n' > "$T/model/tokenizer_config.json"
"$BIN" query -i "$T/idx2" "volcano" 2> "$T/err.txt" && fail "changed model accepted"
grep -q "mismatch: the index was built with model .* but .* has fingerprint" "$T/err.txt" || fail "message: $(cat "$T/err.txt")"
"$BIN" query -i "$T/idx" --model "$T/model" "volcano" 2> "$T/err.txt" && fail "--model of another model accepted"
grep -q "rebuild the index or pass the right --model" "$T/err.txt" || fail "message: $(cat "$T/err.txt")"
cp "$MODEL/tokenizer_config.json" "$T/model/tokenizer_config.json"
"$BIN" query -i "$T/idx2" "volcano" -k 1 | cmp -s - "$T/before.out" || fail "index lost after the mismatch"

# malformed corpus line: error with the line number; the index in place still answers
cp "$DATA/corpus.jsonl" "$T/bad.jsonl"
echo '{"_id": "x", "title": 3, "text": "t"}' >> "$T/bad.jsonl"
"$BIN" build "$T/bad.jsonl" -o "$T/idx2" --model "$T/model" --quiet 2> "$T/err.txt" && fail "bad corpus accepted"
grep -q "bad.jsonl:41: field \"title\" is not a string" "$T/err.txt" || fail "message: $(cat "$T/err.txt")"
"$BIN" query -i "$T/idx2" "volcano" -k 1 | cmp -s - "$T/before.out" || fail "index lost after bad corpus"

# an empty corpus is refused (issue 9); built anyway with --allow-empty (where the binary has it),
# a query says that nothing matched instead of printing nothing
: > "$T/empty.jsonl"
"$BIN" build "$T/empty.jsonl" -o "$T/empty.idx" --model "$MODEL" --device cpu --quiet 2> "$T/e.err" \
    && fail "empty corpus accepted"
grep -q "empty.jsonl holds no documents" "$T/e.err" || fail "empty corpus message: $(cat "$T/e.err")"
if "$BIN" build --help 2>&1 | grep -q -- --allow-empty; then
    "$BIN" build "$T/empty.jsonl" -o "$T/empty.idx" --model "$MODEL" --device cpu --quiet --allow-empty \
        || fail "empty build"
    "$BIN" query -i "$T/empty.idx" "anything at all" > "$T/e.out" 2> "$T/e.err" || fail "empty query"
    [ ! -s "$T/e.out" ] || fail "empty index printed hits: $(cat "$T/e.out")"
    grep -q "no document matched (the index holds 0 documents)" "$T/e.err" || fail "empty index message: $(cat "$T/e.err")"
fi

# the README's demo
(cd "$ROOT" && BUILD=$BUILD SPLADE_INDEX="$T/demo.idx" SPLADE_MODEL="$MODEL" sh tools/demo.sh) > "$T/demo.out" 2>&1 || fail "demo: $(cat "$T/demo.out")"
grep -q "bio-1  Photosynthesis" "$T/demo.out" || fail "demo output: $(cat "$T/demo.out")"
echo "ok: model build/query/eval, model mismatch, bad corpus, demo"
exit 0
