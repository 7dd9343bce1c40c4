#!/bin/sh
# splade-index export and encode --queries --format: every engine's documents, from a corpus, a vectors
# file and an index, checked against the engines' documented request shapes (tests/cli/
# test_export_check.py cites them) and against each other (the same vectors whatever the engine);
# random vectors round-trip exactly; an index's de-quantized vectors within doc_scale / 2; mapping
# templates; query bodies; every bad input (usage errors exit 2, input errors exit 1 naming file:line).
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
MODEL=$ROOT/cache/rand-h96
[ -f "$MODEL/model.safetensors" ] || { echo "SKIP: no model at $MODEL (run make models)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 needed to check the JSON"; exit 77; }
CHECK="python3 $ROOT/tests/cli/test_export_check.py"
VOCAB=$MODEL/vocab.txt
T=$(mktemp -d /tmp/splade_cli_exportXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ENGINES="opensearch opensearch-sparse elasticsearch qdrant milvus"
X() { "$BIN" export --quiet "$@"; }

# A corpus: encoded on the fly; the reference is the columns export of the same run's vectors.
CORPUS=$ROOT/data/example/corpus.jsonl
"$BIN" encode --model "$MODEL" --device cpu --input "$CORPUS" > "$T/vec.jsonl" 2>/dev/null || fail "encode"
N=$(wc -l < "$T/vec.jsonl")
X --format columns --vectors "$T/vec.jsonl" --model "$MODEL" > "$T/ref.jsonl" 2> "$T/err" || fail "columns: $(cat "$T/err")"
X --format columns --model "$MODEL" --device cpu --input "$CORPUS" > "$T/ref2.jsonl" 2> "$T/err" || fail "corpus: $(cat "$T/err")"
cmp -s "$T/ref.jsonl" "$T/ref2.jsonl" || fail "--input and --vectors of the encoder's output differ"
for e in $ENGINES columns; do
    X --format "$e" --bulk-size 3 --model "$MODEL" --device cpu --input "$CORPUS" > "$T/$e.out" 2> "$T/err" \
        || fail "$e from a corpus: $(cat "$T/err")"
    $CHECK docs "$e" "$T/$e.out" "$VOCAB" 3 "$T/ref.jsonl" || fail "$e from a corpus"
    X --format "$e" --bulk-size 3 --vectors "$T/vec.jsonl" --model "$MODEL" > "$T/$e.v" 2> "$T/err" \
        || fail "$e from vectors: $(cat "$T/err")"
    cmp -s "$T/$e.out" "$T/$e.v" || fail "$e: --vectors output differs from --input"
    X --format "$e" --print-mapping > "$T/$e.map" || fail "$e --print-mapping"
    $CHECK mapping "$e" "$T/$e.map" || fail "$e mapping"
done
[ "$(grep -c . "$T/qdrant.out")" -eq $(( (N + 2) / 3 )) ] || fail "qdrant: not ceil($N / 3) bodies"

# Random vectors (tokens with dots, string and integer-like ids): exact round trip in every engine.
$CHECK random 200 "$VOCAB" "$T/rand.jsonl" 7
X --format columns --vectors "$T/rand.jsonl" --model "$MODEL" > "$T/rref.jsonl" || fail "random columns"
$CHECK docs columns "$T/rref.jsonl" "$VOCAB" 1 "$T/rref.jsonl" || fail "random columns: weight text"
for e in $ENGINES; do
    X --format "$e" --vectors "$T/rand.jsonl" --model "$MODEL" > "$T/r.$e" || fail "random $e"
    $CHECK docs "$e" "$T/r.$e" "$VOCAB" 256 "$T/rref.jsonl" || fail "random $e"
done
grep -q '"__": ' "$T/r.elasticsearch" || fail "a '.' token was not written as __"
python3 -c '
import json, struct, sys
f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
want = [json.loads(l) for l in open(sys.argv[1])]
got = [json.loads(l) for l in open(sys.argv[2])]
voc = open(sys.argv[3]).read().split("\n")
assert [w["id"] for w in want] == [g["id"] for g in got]
for w, g in zip(want, got):  # the same float32 weights
    assert {voc[t]: f32(x) for t, x in zip(g["term_ids"], g["weights"])} == w["vector"], w["id"]
' "$T/rand.jsonl" "$T/rref.jsonl" "$VOCAB" || fail "random vectors changed through export"

# An index: its stored vectors, de-quantized, within doc_scale / 2 of the vectors it was built from;
# from a model's index (term ids = rows) and a --vectors index (ids through --model's vocabulary).
"$BIN" build --quiet --vectors "$T/vec.jsonl" -o "$T/vix" > /dev/null 2>&1 || fail "build --vectors"
"$BIN" build --quiet --model "$MODEL" --device cpu -o "$T/mix" "$CORPUS" > /dev/null 2>&1 || fail "build"
X --format columns --index "$T/vix" --model "$MODEL" > "$T/ix.cols" 2> "$T/err" || fail "--index: $(cat "$T/err")"
$CHECK dequant "$T/ix.cols" "$T/ref.jsonl" "$VOCAB" || fail "--vectors index de-quantization"
X --format columns --index "$T/mix" > "$T/mix.cols" 2> "$T/err" || fail "--index (model): $(cat "$T/err")"
$CHECK dequant "$T/mix.cols" "$T/ref.jsonl" "$VOCAB" || fail "model index de-quantization"
for e in $ENGINES; do
    X --format "$e" --index "$T/mix" > "$T/ix.$e" || fail "$e from an index"
    $CHECK docs "$e" "$T/ix.$e" "$VOCAB" 256 "$T/mix.cols" || fail "$e from an index"
done
# a --vectors index of two segments (each its own vocabulary: the term-id maps of the union), one doc_scale
SCALE=$(python3 -c 'import json, sys; print("%.9g" % (max(w for l in open(sys.argv[1]) for w in json.loads(l)["vector"].values()) / 255))' "$T/vec.jsonl")
head -n 20 "$T/vec.jsonl" > "$T/vec1.jsonl"; tail -n +21 "$T/vec.jsonl" > "$T/vec2.jsonl"
"$BIN" build --quiet --vectors "$T/vec1.jsonl" --doc-scale "$SCALE" -o "$T/six" > /dev/null 2>&1 || fail "build half"
"$BIN" add --quiet --vectors "$T/vec2.jsonl" -i "$T/six" > /dev/null 2>&1 || fail "add half"
X --format columns --index "$T/six" --model "$MODEL" > "$T/six.cols" || fail "--index of two segments"
$CHECK dequant "$T/six.cols" "$T/ref.jsonl" "$VOCAB" || fail "two-segment --vectors index de-quantization"
# segments and deletions: deleted documents are not exported
"$BIN" delete -i "$T/mix" "$(head -1 "$T/ref.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')" \
    > /dev/null 2>&1 || fail "delete"
X --format columns --index "$T/mix" > "$T/del.cols" || fail "--index after delete"
[ "$(wc -l < "$T/del.cols")" -eq $(( N - 1 )) ] || fail "deleted document exported"
tail -n +2 "$T/mix.cols" | cmp -s - "$T/del.cols" || fail "export after a delete changed other documents"

# Query bodies.
printf '{"_id": "q1", "text": "what causes cancer."}\n{"_id": "q2", "text": "p53"}\n' > "$T/q.jsonl"
for e in $ENGINES; do
    "$BIN" encode --quiet --model "$MODEL" --device cpu --queries --format "$e" --input "$T/q.jsonl" > "$T/q.$e" \
        || fail "encode --queries --format $e"
    $CHECK queries "$e" "$T/q.$e" "$VOCAB" 2 || fail "$e query bodies"
done

# Bad input.
expect() { # STATUS PATTERN -- command...
    st=$1 pat=$2; shift 3
    "$@" > "$T/o" 2> "$T/e"; got=$?
    [ $got -eq "$st" ] || fail "$*: exit $got, not $st ($(cat "$T/e"))"
    grep -q -- "$pat" "$T/e" || fail "$*: message lacks '$pat': $(cat "$T/e")"
}
expect 2 "unknown --format" -- "$BIN" export --format solr --vectors "$T/vec.jsonl"
expect 2 "--format is required" -- "$BIN" export --vectors "$T/vec.jsonl"
expect 2 "one of --input" -- "$BIN" export --format qdrant
expect 2 "one of --input" -- "$BIN" export --format qdrant --vectors "$T/vec.jsonl" --index "$T/mix"
expect 2 "takes no input" -- "$BIN" export --format qdrant --print-mapping --index "$T/mix"
expect 2 "give --output" -- "$BIN" export --format parquet --vectors "$T/vec.jsonl"
expect 2 "is for --format parquet" -- "$BIN" export --format qdrant --vectors "$T/vec.jsonl" --output x
expect 2 "--bulk-size" -- "$BIN" export --format qdrant --vectors "$T/vec.jsonl" --bulk-size 0
expect 2 "without quotes" -- "$BIN" export --format milvus --print-mapping --field 'a"b'
expect 2 "unexpected argument" -- "$BIN" export --format qdrant --vectors "$T/vec.jsonl" stray
expect 1 "nope.jsonl" -- "$BIN" export --format columns --vectors "$T/nope.jsonl" --model "$MODEL"
expect 1 "nope.idx" -- "$BIN" export --format columns --index "$T/nope.idx"
printf '{"id": "a", "vector": {"the": 1.0}}\n{"id": "b", "vector": {"the": 1.0\n' > "$T/bad.jsonl"
expect 1 "bad.jsonl:2" -- "$BIN" export --format opensearch --vectors "$T/bad.jsonl"
printf '{"id": "a", "vector": {"the": 1.0}}\n{"id": "b", "vector": {"zzqxjunk": 1.0}}\n' > "$T/oov.jsonl"
expect 1 "oov.jsonl:2: token \"zzqxjunk\"" -- "$BIN" export --format qdrant --vectors "$T/oov.jsonl" --model "$MODEL"
X --format opensearch --vectors "$T/oov.jsonl" > /dev/null || fail "token keys need no vocabulary"
printf '{"id": "a", "vector": {"the": -1.0}}\n' > "$T/neg.jsonl"
expect 1 "neg.jsonl:1" -- "$BIN" export --format elasticsearch --vectors "$T/neg.jsonl"
printf '{"_id": "a", "text": "fine"}\n{"_id": "b", "text": \n' > "$T/badc.jsonl"
expect 1 "badc.jsonl:2" -- "$BIN" export --format columns --model "$MODEL" --device cpu --input "$T/badc.jsonl"
expect 2 "go together" -- "$BIN" encode --model "$MODEL" --format qdrant x
expect 2 "unknown --format" -- "$BIN" encode --model "$MODEL" --queries --format columns x
"$BIN" export --format columns --vectors "$T/vec.jsonl" --model "$MODEL" > /dev/full 2> "$T/e"
[ $? -eq 1 ] || fail "/dev/full: exit not 1"
echo "PASS test_export"
