#!/bin/sh
# --threads never changes a vector or an index (issue 9, item 9): `build` and `encode` on the CPU
# with 1, 2 and 3 threads give byte-identical index files and identical encode output, on the
# bundled corpus plus texts longer and shorter than one 64-token unit, and on a SciFact slice
# (../shared; that part skips visibly when absent). Before the fix OpenBLAS's summation order
# followed each thread's share of a GEMM, and 1e-6 differences flipped 8-bit impacts.
set -u
BIN=${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
ROOT=$(pwd)
MODEL=$ROOT/cache/splade-tiny
[ -f "$MODEL/model.safetensors" ] || { echo "skip: no $MODEL (make models)"; exit 77; }
SCIFACT=$ROOT/../shared/data/scifact/corpus.jsonl
T=$(mktemp -d /tmp/splade_cli_threadsXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export SOURCE_DATE_EPOCH=1700000000 # the header's build time: otherwise two builds differ there

# the bundled documents, then generated ones: 300 words (truncated at 256 tokens), 70, 5
cp "$ROOT/data/example/corpus.jsonl" "$T/mixed.jsonl"
awk 'BEGIN { split("cell protein gene tumor vitamin fracture insulin brain mouse risk dose cohort", w, " ");
             n[1] = 300; n[2] = 70; n[3] = 5;
             for (d = 1; d <= 3; d++) { printf "{\"_id\": \"gen%d\", \"title\": \"\", \"text\": \"", d;
               for (i = 0; i < n[d]; i++) printf "%s%s", (i ? " " : ""), w[1 + (i * 7 + d) % 12];
               print "\"}" } }' >> "$T/mixed.jsonl"

# same_for_threads NAME CORPUS: builds and encodes it with 1, 2 and 3 threads
same_for_threads() {
    for t in 1 2 3; do
        "$BIN" build "$2" -o "$T/$1.ix$t" --model "$MODEL" --device cpu --threads $t --quiet ||
            fail "$1: build with --threads $t"
        "$BIN" encode --input "$2" --model "$MODEL" --device cpu --threads $t --quiet > "$T/$1.enc$t" ||
            fail "$1: encode with --threads $t"
    done
    for t in 2 3; do
        cmp -s "$T/$1.ix1/index.spx" "$T/$1.ix$t/index.spx" || fail "$1: the index built with --threads $t differs from --threads 1"
        cmp -s "$T/$1.enc1" "$T/$1.enc$t" || fail "$1: encode with --threads $t differs from --threads 1"
    done
    echo "ok: $1 ($(wc -l < "$2") documents): identical index and vectors with 1, 2 and 3 threads"
}

same_for_threads mixed "$T/mixed.jsonl"
if [ -f "$SCIFACT" ]; then
    head -n 48 "$SCIFACT" > "$T/scifact48.jsonl"
    same_for_threads scifact48 "$T/scifact48.jsonl"
else
    echo "skip (part): no $SCIFACT, the SciFact slice was not run"
fi
