#!/bin/sh
# A build that read nothing useful does not replace a good index: an empty vectors file fails at the
# reader ("holds no documents"), documents whose vectors are all empty over an index with postings fail
# at the install (src/index/install.c) with an error naming the index and both counts. Either way the
# previous index stays byte-identical, answering exactly as before, with nothing left in its folder;
# `--allow-empty` does replace it. A build without postings into a new folder (nothing to lose) succeeds.
set -u
BIN=${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
T=$(mktemp -d /tmp/splade_cli_emptyXXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

cat > good.jsonl <<'J'
{"id": "d1", "vector": {"cat": 1.5, "dog": 0.5}}
{"id": "d2", "vector": {"dog": 2.0, "bone": 1.0}}
{"id": "d3", "vector": {"bone": 0.3}}
J
printf '{"id": "q1", "vector": {"dog": 1.0, "bone": 0.5}}\n' > q.jsonl
: > empty.jsonl
printf '{"id": "e1", "vector": {}}\n{"id": "e2", "vector": {}}\n' > novectors.jsonl
"$BIN" build --vectors good.jsonl -o ix --quiet || fail "good build"
"$BIN" query -i ix --vector-queries q.jsonl > before.trec || fail "query before"
[ -s before.trec ] || fail "the good index answers nothing"
cp ix/index.spx good.spx

check_refused() { # input, the error it must give
    "$BIN" build --vectors "$1" -o ix --quiet > out.txt 2>&1 && fail "$1 replaced a good index"
    grep -q "$2" out.txt || fail "$1: the error does not say \"$2\": $(cat out.txt)"
    cmp -s ix/index.spx good.spx || fail "$1: index.spx changed"
    "$BIN" query -i ix --vector-queries q.jsonl | cmp -s - before.trec || fail "$1: the index answers differently"
    [ "$(ls -A ix)" = "index.spx" ] || fail "$1: left in the index folder: $(ls -A ix)"
}
# an input without documents is refused by the reader (src/index/ingest_*.c) before any index is touched
check_refused empty.jsonl "empty.jsonl holds no documents"
# documents whose vectors are all empty get as far as the install, which refuses them
check_refused novectors.jsonl "ix/index.spx holds 3 documents (5 postings) and the new build has 2 documents (0 postings)"
grep -q -- "--allow-empty" out.txt || fail "the install's refusal does not say how to override: $(cat out.txt)"

"$BIN" build --vectors empty.jsonl -o ix --quiet --allow-empty || fail "--allow-empty was refused"
"$BIN" query -i ix --vector-queries q.jsonl > after.trec || fail "query of the empty index"
[ -s after.trec ] && fail "the empty index still answers: $(cat after.trec)"
"$BIN" build --vectors novectors.jsonl -o ix --quiet || fail "an index without postings over an empty one was refused"
"$BIN" build --vectors novectors.jsonl -o fresh --quiet || fail "a build without postings into a new folder was refused"
echo "ok: empty builds refused over a good index (previous index intact), allowed with --allow-empty or where nothing is lost"
exit 0
