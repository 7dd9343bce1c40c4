#!/bin/sh
# Bounded-memory builds (docs/FORMAT.md, "Bounded-memory builds"): `build --memory` with a budget
# far below the collection writes several segments, installed in one generation, and answers every
# --algo byte for byte like an in-memory build with the same doc_scale; `add --memory` likewise
# (its segments take the index's doc_scale); a duplicate id across segments is still refused (and
# leaves no segment behind); --memory is parsed strictly (exit 2 naming the option).
set -u
BIN=${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
T=$(mktemp -d /tmp/splade_cli_memXXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

gen() { # gen SEED FIRST COUNT: coarse weights (ties), 12 terms per document
    awk -v s="$1" -v f="$2" -v n="$3" 'BEGIN { srand(s); for (d = f; d < f + n; d++) {
        printf "{\"id\": \"d%d\", \"vector\": {", d;
        for (i = 0; i < 12; i++) printf "%s\"t%d\": %.2f", (i ? ", " : ""), int(rand() * 200) + i * 200, int(rand() * 6 + 1) * 0.5;
        print "}}" } }'
}
gen 1 0 3000 > a.jsonl
gen 2 3000 1000 > b.jsonl
awk 'BEGIN { srand(9); for (q = 0; q < 30; q++) { printf "{\"id\": \"q%d\", \"vector\": {\"t1\": 1.0", q;
     for (i = 0; i < 8; i++) printf ", \"t%d\": %.1f", 2 + i * 300 + int(rand() * 290), int(rand() * 3 + 1); print "}}" } }' > q.jsonl

same_runs() { # same_runs DIR REF WHAT
    for a in bmp wmaxscore bmm maxscore taat; do
        "$BIN" query -i "$1" --vector-queries q.jsonl -k 20 --algo $a --output s.trec || fail "$3: query $a"
        "$BIN" query -i "$2" --vector-queries q.jsonl -k 20 --algo $a --output r.trec || fail "$3: reference query $a"
        [ -s r.trec ] || fail "$3: empty run"
        cmp -s s.trec r.trec || fail "$3: --algo $a differs from the in-memory build: $(diff s.trec r.trec | head -4)"
    done
}
segments() { grep -o '"file": *"[^"]*"' "$1/MANIFEST" | wc -l | tr -d ' '; }

# bad values: exit 2, the option named, nothing created
for v in 0 abc 12X 4GB -1 "" 1.5G 99999999999999999999; do
    "$BIN" build --vectors a.jsonl -o bad --memory "$v" > out.txt 2>&1; rc=$?
    [ $rc = 2 ] || fail "--memory '$v': exit $rc"
    grep -q -- "--memory" out.txt || fail "--memory '$v': $(cat out.txt)"
    [ ! -e bad ] || fail "--memory '$v' created the folder"
done
"$BIN" add --vectors b.jsonl -i bad --memory 3Q > out.txt 2>&1; [ $? = 2 ] || fail "add --memory 3Q"
grep -q -- "--memory" out.txt || fail "add --memory 3Q: $(cat out.txt)"

# build: a tiny budget gives several segments in generation 1, no strays, same answers
"$BIN" build --vectors a.jsonl -o ix --memory 256K --quiet || fail "bounded build"
[ -f ix/MANIFEST ] || fail "bounded build wrote no MANIFEST"
n=$(segments ix)
[ "$n" -ge 3 ] || fail "bounded build wrote $n segments (expected several)"
grep -q '"generation": *1' ix/MANIFEST || fail "not one generation: $(head -c 200 ix/MANIFEST)"
for f in $(ls -A ix); do
    [ "$f" = MANIFEST ] || grep -q "\"$f\"" ix/MANIFEST || fail "stray file ix/$f"
done
scale=$("$BIN" info -i ix | awk '/^doc_scale:/ { print $2 }')
"$BIN" build --vectors a.jsonl -o ref --doc-scale "$scale" --quiet || fail "reference build"
[ ! -f ref/MANIFEST ] || fail "the in-memory build spilled"
same_runs ix ref "build --memory"
lv=$("$BIN" info -i ix | awk '/^live documents:/ { print $3 }')
[ "$lv" = 3000 ] || fail "info: $lv live documents"

# the merge policy after a bounded build: more than 10 segments are merged (streaming) down to 10 in
# a second generation; the answers stay those of the in-memory build, nothing is left behind
"$BIN" build --vectors a.jsonl -o pol --memory 64K > out.txt || fail "bounded build with the policy: $(cat out.txt)"
n=$(segments pol)
[ "$n" = 10 ] || fail "the policy left $n segments, not 10"
grep -q '"generation": *2' pol/MANIFEST || fail "the policy's merge is not generation 2: $(head -c 200 pol/MANIFEST)"
grep -q "of them merged into one" out.txt || fail "build summary does not report the merge: $(cat out.txt)"
for f in $(ls -A pol); do
    [ "$f" = MANIFEST ] || grep -q "\"$f\"" pol/MANIFEST || fail "policy: stray file pol/$f"
done
scale=$("$BIN" info -i pol | awk '/^doc_scale:/ { print $2 }')
"$BIN" build --vectors a.jsonl -o refp --doc-scale "$scale" --quiet || fail "reference build (policy)"
same_runs pol refp "build --memory + merge policy"

# the same with a given doc_scale, and a rebuild over the segmented folder (a new generation)
"$BIN" build --vectors a.jsonl -o ix --memory 384K --doc-scale 0.01 --quiet || fail "bounded rebuild"
grep -q '"generation": *2' ix/MANIFEST || fail "rebuild is not generation 2"
"$BIN" build --vectors a.jsonl -o ref2 --doc-scale 0.01 --quiet || fail "reference build 2"
same_runs ix ref2 "build --memory --doc-scale"

# add: its segments take the index's doc_scale and follow its sequence
"$BIN" build --vectors a.jsonl -o ix --memory 256K --quiet || fail "bounded build 3"
"$BIN" add --vectors b.jsonl -i ix --memory 256K --no-merge > out.txt || fail "bounded add: $(cat out.txt)"
grep -q "1000 documents" out.txt || fail "add summary: $(cat out.txt)"
scale=$("$BIN" info -i ix | awk '/^doc_scale:/ { print $2 }')
cat a.jsonl b.jsonl > ab.jsonl
"$BIN" build --vectors ab.jsonl -o ref3 --doc-scale "$scale" --quiet || fail "reference build 3"
same_runs ix ref3 "add --memory"
"$BIN" merge -i ix --quiet > /dev/null 2>&1 || "$BIN" merge -i ix > /dev/null || fail "merge"
same_runs ix ref3 "merged"

# a duplicate id across spilled segments: refused, naming both lines; nothing left behind
cat a.jsonl > dup.jsonl && sed -n 5p a.jsonl >> dup.jsonl
ls -A ix > before.txt
"$BIN" build --vectors dup.jsonl -o ix --memory 256K > out.txt 2>&1 && fail "duplicate build succeeded"
grep -q 'dup.jsonl:3001: duplicate id "d4" (first seen on line 5)' out.txt || fail "duplicate: $(cat out.txt)"
ls -A ix > after.txt
cmp -s before.txt after.txt || fail "failed build left files: $(diff before.txt after.txt)"
same_runs ix ref3 "after a failed build"
gen 7 100 10 > dup2.jsonl && cat b.jsonl >> dup2.jsonl
"$BIN" add --vectors dup2.jsonl -i ix --memory 256K --no-merge > out.txt 2>&1 && fail "add of existing ids succeeded"
grep -q 'id "d100" is already in the index' out.txt || fail "add duplicate: $(cat out.txt)"
ls -A ix > after.txt
cmp -s before.txt after.txt || fail "failed add left files: $(diff before.txt after.txt)"
echo "PASS test_memory"
