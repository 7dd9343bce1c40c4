#!/bin/sh
# A 105,879-term vocabulary end to end (issue 15): encode, build and query a corpus of ten scripts
# with cache/rand-multi (BERT, random weights, bert-base-uncased's vocabulary extended with tokens
# of several scripts past id 65,535; make models). Term ids above 65,535 must survive the encoder,
# the index (vocabulary, postings) and the query: each text, queried, finds itself first (its
# vector's self dot product dominates with random weights). Skipped (exit 77) without the model.
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
M=$ROOT/cache/rand-multi
[ -f "$M/model.safetensors" ] || { echo "SKIP: no $M (run make models)"; exit 77; }
T=$(mktemp -d /tmp/splade_cli_multiXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
C=$ROOT/tests/data/models/multilingual.jsonl

# encode: tokens of ids above 65,535 appear under their own strings
"$BIN" encode --model "$M" --device cpu --input "$C" --quiet > "$T/vec.jsonl" || fail "encode"
python3 - "$T/vec.jsonl" "$M/vocab.txt" <<'PY' || fail "encode: no token above id 65,535"
import json, sys
ids = {t: i for i, t in enumerate(open(sys.argv[2], encoding="utf-8").read().split("\n"))}
high = sum(ids[t] > 65535 for l in open(sys.argv[1], encoding="utf-8") for t in json.loads(l)["vector"])
print("encode: %d weights of tokens above id 65,535" % high)
sys.exit(0 if high > 100 else 1)
PY

"$BIN" build "$C" -o "$T/idx" --model "$M" --device cpu --quiet || fail "build"
"$BIN" info -i "$T/idx" > "$T/info" || fail "info"
grep -q "105879" "$T/info" || fail "info lacks the 105,879 terms: $(cat "$T/info")"
"$BIN" query -i "$T/idx" --queries "$C" -k 1 -o "$T/run.trec" || fail "query"
self=$(awk '$1 == $3' "$T/run.trec" | wc -l)
[ "$self" -ge 10 ] || fail "only $self of 12 texts found themselves first: $(cat "$T/run.trec")"
# the same from precomputed vectors (the sorted-vocabulary index): the same top hits
"$BIN" build --vectors "$T/vec.jsonl" -o "$T/vidx" --quiet 2> "$T/verr" || fail "build --vectors: $(cat "$T/verr")"
echo "ok: 105,879-term vocabulary: encode, build, info, query ($self/12 texts find themselves)"
