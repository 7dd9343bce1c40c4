#!/bin/sh
# Inference-free ("doc-only") models end to end (issue 15): build data/example with a
# sentence-transformers Router model (documents by the forward pass, queries by its
# SparseStaticEmbedding table) and with an OpenSearch-style plain folder + idf.json, query both;
# an index built in one mode is refused, with a clear message, by a model of the other mode; a
# model whose query table is missing is refused. Random-weight models of make models (skipped,
# exit 77, when absent).
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
ROUTER=$ROOT/cache/rand-docv3
PLAIN=$ROOT/cache/rand-docv2-idf
[ -f "$ROUTER/router_config.json" ] && [ -f "$PLAIN/idf.json" ] || { echo "SKIP: no $ROUTER or $PLAIN (run make models)"; exit 77; }
T=$(mktemp -d /tmp/splade_cli_ifreeXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
DATA=$ROOT/data/example

for M in "$ROUTER" "$PLAIN"; do
    n=$(basename "$M")
    "$BIN" build "$DATA/corpus.jsonl" -o "$T/$n.idx" --model "$M" --device cpu --quiet || fail "build $n"
    "$BIN" query -i "$T/$n.idx" "why do earthquakes happen" -k 3 > "$T/$n.q" || fail "query $n"
    [ "$(wc -l < "$T/$n.q")" -ge 1 ] || fail "$n: no hit: $(cat "$T/$n.q")"
    "$BIN" query -i "$T/$n.idx" --queries "$DATA/queries.jsonl" -k 10 -o "$T/$n.trec" || fail "batch $n"
    # random weights: a query's tokens meet few document terms, so not every query finds a document
    [ "$(cut -d' ' -f1 "$T/$n.trec" | sort -u | wc -l)" -ge 3 ] || fail "$n: run lacks queries"
done

"$BIN" info -i "$T/rand-docv3.idx" | grep -q "queries: inference-free" || fail "info does not say inference-free"

# same weights and table, different activation (log1p_relu vs relu): different document weights
cmp -s "$T/rand-docv3.trec" "$T/rand-docv2-idf.trec" && fail "the two activations gave the same run"

# one mode queried with the other: a plain copy without idf.json encodes queries by the forward pass
cp -r "$PLAIN" "$T/full" && rm "$T/full/idf.json"
"$BIN" query -i "$T/rand-docv2-idf.idx" --model "$T/full" "volcano" 2> "$T/e1" && fail "full-encoding model accepted"
grep -q "built with an inference-free model .* has no query table" "$T/e1" || fail "message: $(cat "$T/e1")"
"$BIN" build "$DATA/corpus.jsonl" -o "$T/full.idx" --model "$T/full" --device cpu --quiet || fail "build full"
"$BIN" query -i "$T/full.idx" "volcano" -k 1 > /dev/null 2>&1 || fail "query full"
"$BIN" info -i "$T/full.idx" | grep -q "inference-free" && fail "info: full-encoding index called inference-free"
"$BIN" query -i "$T/full.idx" --model "$PLAIN" "volcano" 2> "$T/e2" && fail "inference-free model accepted"
grep -q "encodes queries with the forward pass, but .* is an inference-free model" "$T/e2" || fail "message: $(cat "$T/e2")"

# another query table (same weights) is another model to the index
cp -r "$PLAIN" "$T/idf2"
python3 -c "import json; p='$T/idf2/idf.json'; d=json.load(open(p)); d['the']=d.get('the', 0)+1; json.dump(d, open(p, 'w'))"
"$BIN" query -i "$T/rand-docv2-idf.idx" --model "$T/idf2" "volcano" 2> "$T/e3" && fail "other table accepted"
grep -q "rebuild the index or pass the right --model" "$T/e3" || fail "message: $(cat "$T/e3")"

# a Router folder whose query table is missing
cp -r "$ROUTER" "$T/noq" && rm "$T/noq/query_0_SparseStaticEmbedding/model.safetensors"
"$BIN" query -i "$T/rand-docv3.idx" --model "$T/noq" "volcano" 2> "$T/e4" && fail "missing table accepted"
grep -q "query_0_SparseStaticEmbedding/model.safetensors" "$T/e4" || fail "message: $(cat "$T/e4")"
"$BIN" build "$DATA/corpus.jsonl" -o "$T/x.idx" --model "$T/noq" --quiet 2> "$T/e5" && fail "build with missing table"
grep -q "cannot open" "$T/e5" || fail "message: $(cat "$T/e5")"
# encode --queries --format (issue 16's query bodies): the table's vector, not the forward pass:
# the text's distinct tokens (tokenize, without [CLS]/[SEP]) weighted by idf.json
"$BIN" encode --queries --format qdrant --model "$PLAIN" "volcano eruption volcano the" > "$T/qd" 2>/dev/null || fail "encode --queries"
"$BIN" tokenize --model "$PLAIN" "volcano eruption volcano the" > "$T/tok" || fail "tokenize"
python3 - "$T/qd" "$T/tok" "$PLAIN/idf.json" <<'PY' || fail "encode --queries --format with a query table"
import json, sys
body = json.loads(open(sys.argv[1]).read())["query"]
ids = json.loads(open(sys.argv[2]).read())[1:-1]
idf = json.load(open(sys.argv[3]))
vocab = [l.rstrip("\n") for l in open(sys.argv[3].rsplit("/", 1)[0] + "/vocab.txt")]
want = sorted((i, idf[vocab[i]]) for i in set(ids) if idf.get(vocab[i], 0) > 0)
got = list(zip(body["indices"], body["values"]))
assert len(want) >= 2 and [i for i, _ in got] == [i for i, _ in want], (got, want)
assert all(abs(a - b) <= 1e-4 * max(1, abs(b)) for (_, a), (_, b) in zip(got, want)), (got, want)
PY
echo "ok: inference-free build/query (Router and idf.json layouts), mode and table mismatches refused"
