#!/bin/sh
# `make demo`: index data/example with the default model (splade-tiny, fetched by `make models`),
# ask it one question, then score the bundled queries against their qrels.
set -eu
BUILD=${BUILD:-build}
BIN=$BUILD/splade-index
IDX=${SPLADE_INDEX:-$BUILD/demo.idx}
echo "== splade-index build data/example/corpus.jsonl -o $IDX"
"$BIN" build data/example/corpus.jsonl -o "$IDX"
echo
echo "== splade-index query -i $IDX \"how do plants make oxygen from sunlight\""
"$BIN" query -i "$IDX" "how do plants make oxygen from sunlight" -k 5
echo
echo "== splade-index query --queries data/example/queries.jsonl, then eval against data/example/qrels.tsv"
"$BIN" query -i "$IDX" --queries data/example/queries.jsonl -k 100 --output "$BUILD/demo.trec"
"$BIN" eval --run "$BUILD/demo.trec" --qrels data/example/qrels.tsv
