#!/bin/sh
# Per-command start-up cost of the CLI: peak RSS (KiB) and wall time (s), median of RUNS runs each,
# for `--help`, `tokenize` of one text and a small build of data/example (splade-tiny) with
# `--device cpu` and `--device auto` (on a machine without a GPU: the CPU after the GPU probe).
# Usage: BUILD=build-cu RUNS=7 sh bench/startup_cost.sh     (prints a Markdown table)
# Needs /usr/bin/time (GNU), ../shared's bert vocab for tokenize and cache/splade-tiny for build.
set -u
BIN=${BUILD:-build}/splade-index
RUNS=${RUNS:-7}
VOCAB=../shared/data/bert-base-uncased/vocab.txt
MODEL=cache/splade-tiny
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
row() { # label, command...
    label=$1; shift
    : >"$T/rss"; : >"$T/wall"
    i=0
    while [ $i -lt "$RUNS" ]; do
        /usr/bin/time -f "%M %e" -o "$T/one" "$@" >/dev/null 2>"$T/err" || { echo "| $label | failed: $(tail -1 "$T/err") | |"; return; }
        read -r rss wall <"$T/one"
        echo "$rss" >>"$T/rss"; echo "$wall" >>"$T/wall"
        i=$((i + 1))
    done
    echo "| $label | $(median <"$T/rss") | $(median <"$T/wall") |"
}
echo "| command | peak RSS KiB (median of $RUNS) | wall s (median) |"
echo "|---|---|---|"
row "splade-index --help" "$BIN" --help
if [ -r "$VOCAB" ]; then row "splade-index tokenize --vocab VOCAB \"Hello, world!\"" "$BIN" tokenize --vocab "$VOCAB" "Hello, world!"; fi
if [ -d "$MODEL" ]; then
    row "splade-index build data/example/corpus.jsonl --device cpu --model $MODEL" \
        "$BIN" build data/example/corpus.jsonl -o "$T/ix" --device cpu --model "$MODEL" --quiet
    row "splade-index build data/example/corpus.jsonl --device auto --model $MODEL" \
        "$BIN" build data/example/corpus.jsonl -o "$T/ix" --device auto --model "$MODEL" --quiet
fi
