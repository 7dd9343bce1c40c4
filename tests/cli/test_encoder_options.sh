#!/bin/sh
# The encoder options are one set (src/cli/encoder_opts.c) for every command that encodes: build,
# add, update, encode and export describe them with the same text, and --top-k / --threshold given to
# build or add shape the indexed vectors exactly as they shape encode's output (the same term ids).
# Uses cache/rand-h96 (written by `make models` without network; skipped, exit 77, without it).
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
MODEL=$ROOT/cache/rand-h96
T=$(mktemp -d /tmp/splade_cli_encoptsXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# one description: the block from "Encoder options" to the end is byte-identical in every --help
for cmd in build add update encode export; do
    "$BIN" $cmd --help > "$T/help" || fail "$cmd --help"
    sed -n '/^Encoder options/,$p' "$T/help" > "$T/block-$cmd"
    grep -q -- "--top-k K" "$T/block-$cmd" || fail "$cmd --help lacks the encoder options: $(cat "$T/help")"
    cmp -s "$T/block-build" "$T/block-$cmd" || fail "$cmd describes the encoder options differently"
done

[ -f "$MODEL/model.safetensors" ] || { echo "SKIP: no model at $MODEL (run make models)"; exit 77; }
head -6 "$ROOT/data/example/corpus.jsonl" > "$T/c.jsonl"
sed -n '7,9p' "$ROOT/data/example/corpus.jsonl" > "$T/more.jsonl"
# term ids of each line of `export --format columns` / of encode's JSONL, one "id: ids" line each
ids_of_index() {
    "$BIN" export --format columns --index "$1" --model "$MODEL" 2> /dev/null |
        python3 -c 'import json, sys
for l in sys.stdin: d = json.loads(l); print(d["id"] + ": " + " ".join(map(str, sorted(d["term_ids"]))))'
}
ids_of_encode() {
    "$BIN" encode --model "$MODEL" --device cpu "$@" |
        python3 -c 'import json, sys
vocab = {t.rstrip("\n"): i for i, t in enumerate(open(sys.argv[1], encoding="utf-8"))}
for l in sys.stdin:
    d = json.loads(l); print(d["id"] + ": " + " ".join(map(str, sorted(vocab[t] for t in d["vector"]))))' "$MODEL/vocab.txt"
}

"$BIN" build "$T/c.jsonl" -o "$T/full" --model "$MODEL" --device cpu --quiet || fail "build"
ids_of_index "$T/full" > "$T/full.ids"
awk '{ if (NF - 1 <= 3) exit 1 }' "$T/full.ids" || fail "a document has <= 3 terms without --top-k: the check below proves nothing"

"$BIN" build "$T/c.jsonl" -o "$T/k3" --model "$MODEL" --device cpu --quiet --top-k 3 || fail "build --top-k 3"
"$BIN" add "$T/more.jsonl" -i "$T/k3" --device cpu --quiet --top-k 3 || fail "add --top-k 3"
ids_of_index "$T/k3" | sort > "$T/k3.ids"
cat "$T/c.jsonl" "$T/more.jsonl" > "$T/all.jsonl"
ids_of_encode --top-k 3 --input "$T/all.jsonl" | sort > "$T/k3.want"
[ "$(wc -l < "$T/k3.ids")" -eq 9 ] || fail "build + add --top-k 3: $(wc -l < "$T/k3.ids") documents, not 9"
cmp -s "$T/k3.ids" "$T/k3.want" || fail "build/add --top-k 3 indexed other terms than encode --top-k 3:
$(diff "$T/k3.want" "$T/k3.ids")"

# --threshold: the weights at or under it are dropped from the index as from encode's output
"$BIN" build "$T/c.jsonl" -o "$T/t" --model "$MODEL" --device cpu --quiet --threshold 0.3 || fail "build --threshold"
ids_of_index "$T/t" | sort > "$T/t.ids"
ids_of_encode --threshold 0.3 --input "$T/c.jsonl" | sort > "$T/t.want"
cmp -s "$T/t.ids" "$T/t.want" || fail "build --threshold 0.3 indexed other terms than encode --threshold 0.3"
cmp -s "$T/t.ids" "$T/full.ids" && fail "--threshold 0.3 dropped nothing: the check proves nothing"
echo "ok: one encoder-options text for 5 commands; build/add --top-k and --threshold index encode's terms"
exit 0
