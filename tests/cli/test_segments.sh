#!/bin/sh
# The living index through the CLI (docs/FORMAT.md, "Segments and the manifest"): add, update,
# delete, merge and info on a --vectors index; after each step every --algo answers byte for byte
# like one `build --doc-scale` of the live documents in the order they were added; the size-tiered
# policy after add; and the bad input: add to a missing folder (refused, suggests build, creates
# nothing), add to a damaged index (refused, nothing written), an id already in the index, unknown
# ids (reported; --strict: exit 1, nothing changed), two writers at once (the second names the
# holder), a stale lock file left by a killed writer (ignored).
set -u
BIN=${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
T=$(mktemp -d /tmp/splade_cli_segXXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

# coarse weights (many ties), documents of 2000 ids in 4 files; an update file re-using some ids
gen() { # gen SEED FIRST COUNT PREFIX
    awk -v s="$1" -v f="$2" -v n="$3" -v p="$4" 'BEGIN { srand(s); for (d = f; d < f + n; d++) {
        printf "{\"id\": \"%s%d\", \"vector\": {", p, d;
        for (i = 0; i < 8; i++) printf "%s\"t%d\": %.2f", (i ? ", " : ""), int(rand() * 300) + i * 300, int(rand() * 4 + 1) * 0.5;
        print "}}" } }'
}
gen 1 0 1200 d > a.jsonl
gen 2 1200 300 d > b.jsonl
gen 3 1500 300 d > c.jsonl
gen 4 1800 200 d > e.jsonl
gen 5 100 50 d > upd.jsonl   # ids d100..d149, new vectors
awk 'BEGIN { srand(9); for (q = 0; q < 25; q++) { printf "{\"id\": \"q%d\", \"vector\": {\"t1\": 1.0", q;
     for (i = 0; i < 6; i++) printf ", \"t%d\": %.1f", int(rand() * 2400), int(rand() * 3 + 1); print "}}" } }' > q.jsonl

# `live` holds the live documents in the order they were added; compare DIR with a build of it
cp a.jsonl live.jsonl
same_as_build() {
    scale=$("$BIN" info -i ix | awk '/^doc_scale:/ { print $2 }')
    rm -rf ref && "$BIN" build --vectors live.jsonl -o ref --doc-scale "$scale" --quiet || fail "$1: reference build"
    for a in bmp wmaxscore bmm maxscore taat; do
        "$BIN" query -i ix --vector-queries q.jsonl -k 15 --algo $a --output s.trec || fail "$1: query $a"
        "$BIN" query -i ref --vector-queries q.jsonl -k 15 --algo $a --output r.trec || fail "$1: reference query $a"
        [ -s r.trec ] || fail "$1: empty run"
        cmp -s s.trec r.trec || fail "$1: --algo $a differs from a single build: $(diff s.trec r.trec | head -4)"
    done
    n=$("$BIN" info -i ix | awk '/^live documents:/ { print $3 }')
    [ "$n" = "$(wc -l < live.jsonl | tr -d ' ')" ] || fail "$1: info says $n live documents"
}
no_strays() { # only MANIFEST and the files it names
    for f in $(ls -A ix); do
        [ "$f" = MANIFEST ] || grep -q "\"$f\"" ix/MANIFEST || fail "$1: stray file ix/$f"
    done
}

# bad input: add to a missing folder
"$BIN" add --vectors b.jsonl -i missing > out.txt 2>&1 && fail "add to a missing folder succeeded"
grep -q "no index here" out.txt && grep -q "splade-index build" out.txt || fail "add to a missing folder: $(cat out.txt)"
[ ! -e missing ] || fail "add to a missing folder created it"

"$BIN" build --vectors a.jsonl -o ix --quiet || fail "build"
same_as_build "build"
"$BIN" add --vectors b.jsonl -i ix > out.txt || fail "add: $(cat out.txt)"
grep -q "300 documents as segment ix/seg-1.spx" out.txt || fail "add summary: $(cat out.txt)"
cat b.jsonl >> live.jsonl
same_as_build "add"
no_strays "add"

# an id already in the index
"$BIN" add --vectors upd.jsonl -i ix > out.txt 2>&1 && fail "add of existing ids succeeded"
grep -q 'upd.jsonl:1: id "d100" is already in the index (segment ix/index.spx)' out.txt || fail "duplicate: $(cat out.txt)"
grep -q "update" out.txt || fail "the duplicate error does not suggest update: $(cat out.txt)"
"$BIN" update --vectors upd.jsonl -i ix > out.txt || fail "update: $(cat out.txt)"
grep -q "50 replaced" out.txt || fail "update summary: $(cat out.txt)"
grep -v '"d1[0-4][0-9]"' live.jsonl > l && cat upd.jsonl >> l && mv l live.jsonl
same_as_build "update"

# delete: arguments, a file, unknown ids, --strict
"$BIN" delete -i ix d7 d1250 nosuch1 > out.txt 2> err.txt || fail "delete: $(cat err.txt)"
grep -q "deleted 2 documents" out.txt && grep -q '1 ids not in the index: "nosuch1"' err.txt || fail "delete: $(cat out.txt err.txt)"
printf 'd8\r\n\nd1450\n' > ids.txt
"$BIN" delete -i ix --ids ids.txt --quiet || fail "delete --ids"
grep -v '"d7"\|"d1250"\|"d8"\|"d1450"' live.jsonl > l && mv l live.jsonl
gen_before=$(awk -F': ' '/"generation"/ { print $2 }' ix/MANIFEST)
"$BIN" delete -i ix d9 nosuch2 --strict > out.txt 2>&1 && fail "delete --strict of an unknown id succeeded"
grep -q '"nosuch2"' out.txt && grep -q "nothing deleted" out.txt || fail "delete --strict: $(cat out.txt)"
[ "$(awk -F': ' '/"generation"/ { print $2 }' ix/MANIFEST)" = "$gen_before" ] || fail "delete --strict changed the index"
same_as_build "delete"
no_strays "delete"

# info
"$BIN" info -i ix > info.txt || fail "info"
grep -q "^seg-2.spx  *50  *0 " info.txt && grep -q "^index.spx  *1200  *52 " info.txt || fail "info: $(cat info.txt)"

# merge keeps every answer; the size-tiered policy after add
"$BIN" merge -i ix --max-segments 2 > out.txt || fail "merge --max-segments: $(cat out.txt)"
[ "$("$BIN" info -i ix | awk '/^live documents:/ { print $5 }')" = 2 ] || fail "merge --max-segments 2: $("$BIN" info -i ix)"
same_as_build "merge --max-segments 2"
"$BIN" add --vectors c.jsonl -i ix --no-merge --quiet && cat c.jsonl >> live.jsonl
"$BIN" add --vectors e.jsonl -i ix --max-segments 2 > out.txt || fail "add with the policy"
cat e.jsonl >> live.jsonl
grep -q "segments merged" out.txt || fail "the policy did not merge: $(cat out.txt)"
[ "$("$BIN" info -i ix | awk '/^live documents:/ { print $5 }')" = 2 ] || fail "policy: $("$BIN" info -i ix)"
same_as_build "size-tiered merge"
"$BIN" merge -i ix > out.txt || fail "merge"
grep -q "merged 2 segments" out.txt || fail "merge: $(cat out.txt)"
same_as_build "merge"
no_strays "merge"
"$BIN" merge -i ix | grep -q "nothing to merge" || fail "a second merge did something"

# two writers at once: a slow add holds the lock
gen 6 5000 60000 big > big.jsonl
"$BIN" add --vectors big.jsonl -i ix --quiet > a.out 2>&1 & a=$!
n=0
until grep -q "pid $a " ix/.lock 2>/dev/null; do
    kill -0 $a 2>/dev/null || fail "the big add ended before it was seen holding the lock: $(cat a.out)"
    n=$((n + 1)); [ $n -lt 2000 ] || fail "ix/.lock never named the add (pid $a)"
    sleep 0.005
done
"$BIN" delete -i ix d10 > b.out 2>&1 && fail "a delete during an add succeeded"
grep -q "is writing this index.*pid $a " b.out || fail "the second writer's error: $(cat b.out)"
"$BIN" merge -i ix > b.out 2>&1 && fail "a merge during an add succeeded"
"$BIN" query -i ix --vector-queries q.jsonl -k 5 > /dev/null || fail "a reader was blocked by the writer"
wait $a || fail "the add holding the lock failed: $(cat a.out)"

# a stale lock file (its holder was killed: flock died with it) does not block the next writer
printf 'pid 999999 on host gone, started 2020-01-01T00:00:00Z\n' > ix/.lock
"$BIN" delete -i ix d11 --quiet || fail "a stale lock file blocked a writer"
[ ! -e ix/.lock ] || fail "the lock file was left behind"

# a damaged index: add refused, nothing written
seg=$(awk -F'"' '/"file"/ { print $4; exit }' ix/MANIFEST)
printf 'XX' | dd of=ix/$seg bs=1 seek=200 conv=notrunc 2>/dev/null
before=$(ls -A ix | sort | tr '\n' ' ')
"$BIN" add --vectors upd.jsonl -i ix > out.txt 2>&1 && fail "add to a damaged index succeeded"
grep -q "checksum" out.txt && grep -q "$seg" out.txt || fail "add to a damaged index: $(cat out.txt)"
[ "$(ls -A ix | sort | tr '\n' ' ')" = "$before" ] || fail "add to a damaged index wrote: $(ls -A ix)"
echo '{"version": 1,' > ix/MANIFEST
"$BIN" info -i ix > out.txt 2>&1 && fail "info on a damaged MANIFEST succeeded"
grep -q "ix/MANIFEST: malformed manifest" out.txt || fail "damaged MANIFEST: $(cat out.txt)"
echo "ok: add/update/delete/merge/info equal a single build for every --algo; policy; missing, damaged," \
     "duplicate, unknown ids, two writers, stale lock"
