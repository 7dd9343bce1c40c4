#!/bin/sh
# One writer per index folder (src/index/install.c): a build holds flock on DIR/.lock from its start
# to its end, and its temporary file has a unique name (.index.spx.tmp-<pid>-<random>).
#  1. a second build into a folder that a build is writing fails at once, with an error naming the
#     holder (its pid), and leaves the first one's work alone: the first finishes, its index is
#     installed, and nothing else is left in the folder;
#  2. two builds started together: exactly one fails with the lock error, the other's index is
#     installed (whichever won, answering exactly like a reference build of its input);
#  3. a build killed with SIGKILL while writing leaves the previous index byte-identical and its
#     temporary file behind; the next build removes it (it holds the lock, so no live writer owns
#     a temporary file) and leaves nothing but index.spx;
#  4. `index.spx` being a folder is reported as "not a regular file", not "mmap: No such device".
set -u
BIN=${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
T=$(mktemp -d /tmp/splade_cli_lockXXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

cat > small.jsonl <<'J'
{"id": "s1", "vector": {"t1": 1.5, "t5001": 0.5}}
{"id": "s2", "vector": {"t1": 0.2, "t10002": 2.0}}
J
printf '{"id": "q1", "vector": {"t1": 1.0, "t5001": 0.7, "t10002": 0.3}}\n' > q.jsonl
N=${SPLADE_LOCK_DOCS:-30000} # builds of about half a second (longer under the sanitizers)
for c in big other; do
    awk -v n="$N" -v p=$c 'BEGIN { srand(p == "big" ? 3 : 4); for (d = 0; d < n; d++) {
         printf "{\"id\": \"%s%d\", \"vector\": {\"t1\": %.3f", p, d, rand() + 0.01;
         for (i = 1; i < 12; i++) printf ", \"t%d\": %.3f", int(rand() * 5000) + i * 5000, rand() * 3 + 0.01;
         print "}}" } }' > $c.jsonl
done
for c in big other small; do
    "$BIN" build --vectors $c.jsonl -o ${c}ref --quiet || fail "reference build"
    "$BIN" query -i ${c}ref --vector-queries q.jsonl -k 10 > $c.trec || fail "reference query"
done
cmp -s big.trec small.trec || cmp -s big.trec other.trec &&
    fail "the collections answer alike: the test could not tell them apart"

# 1. a build holding the lock, a second one started meanwhile
"$BIN" build --vectors small.jsonl -o ix --quiet || fail "first build"
"$BIN" build --vectors big.jsonl -o ix --quiet > a.out 2>&1 & a=$!
n=0
until grep -q "pid $a " ix/.lock 2>/dev/null; do # the lock is taken before the input is read
    kill -0 $a 2>/dev/null || fail "the big build ended before it was seen holding ix/.lock: $(cat a.out; ls -A ix)"
    n=$((n + 1)); [ $n -lt 2000 ] || fail "ix/.lock never named the big build (pid $a): $(ls -A ix)"
    sleep 0.005
done
"$BIN" build --vectors small.jsonl -o ix --quiet > b.out 2>&1
rc=$?
kill -0 $a 2>/dev/null || echo "note: the big build finished before the second one was refused"
wait $a || fail "the build holding the lock failed: $(cat a.out)"
[ $rc -eq 1 ] || fail "a second build into a locked folder ended with status $rc, not 1: $(cat b.out)"
grep -q "is writing this index" b.out || fail "the error does not say the folder is locked: $(cat b.out)"
grep -q "pid $a " b.out || fail "the error does not name the holder (pid $a): $(cat b.out)"
"$BIN" query -i ix --vector-queries q.jsonl -k 10 | cmp -s - big.trec || fail "the lock holder's index was not installed"
[ "$(ls -A ix)" = "index.spx" ] || fail "left in the index folder: $(ls -A ix)"

# 2. two builds of about the same length started together, into ix
for trial in 1 2; do
    "$BIN" build --vectors big.jsonl -o ix --quiet > b1.out 2>&1 & p1=$!
    "$BIN" build --vectors other.jsonl -o ix --quiet > b2.out 2>&1 & p2=$!
    wait $p1; r1=$?
    wait $p2; r2=$?
    "$BIN" query -i ix --vector-queries q.jsonl -k 10 > got.trec || fail "trial $trial: the index does not open"
    if [ $r1 -eq 0 ] && [ $r2 -ne 0 ]; then
        grep -q "is writing this index.*pid $p1 " b2.out || fail "trial $trial: the loser's error: $(cat b2.out)"
        cmp -s got.trec big.trec || fail "trial $trial: the winner's index is not the one installed"
    elif [ $r2 -eq 0 ] && [ $r1 -ne 0 ]; then
        grep -q "is writing this index.*pid $p2 " b1.out || fail "trial $trial: the loser's error: $(cat b1.out)"
        cmp -s got.trec other.trec || fail "trial $trial: the winner's index is not the one installed"
    else
        fail "trial $trial: builds ended with $r1 and $r2; exactly one must fail: $(cat b1.out b2.out)"
    fi
    [ "$(ls -A ix)" = "index.spx" ] || fail "trial $trial: left in the index folder: $(ls -A ix)"
done

# 3. a build killed while writing its temporary file: the next build removes it
"$BIN" build --vectors small.jsonl -o ix --quiet || fail "small build"
cp ix/index.spx before.spx
"$BIN" build --vectors big.jsonl -o ix --quiet > /dev/null 2>&1 & k=$!
while set -- ix/.index.spx.tmp-$k-*; [ ! -e "$1" ] && kill -0 $k 2>/dev/null; do :; done
kill -9 $k 2>/dev/null
wait $k 2>/dev/null
set -- ix/.index.spx.tmp-$k-*
[ -e "$1" ] || fail "no temporary file .index.spx.tmp-$k-* of the killed build: $(ls -A ix)"
stale=$1
cmp -s ix/index.spx before.spx || fail "the killed build changed index.spx"
"$BIN" query -i ix --vector-queries q.jsonl -k 10 | cmp -s - small.trec || fail "the previous index answers differently"
"$BIN" build --vectors small.jsonl -o ix --quiet || fail "build after the killed one (stale lock file: $(cat ix/.lock))"
[ ! -e "$stale" ] || fail "the killed build's temporary file was not removed"
[ "$(ls -A ix)" = "index.spx" ] || fail "left in the index folder: $(ls -A ix)"

# 4. index.spx is a folder
mkdir -p dirix/index.spx
"$BIN" query -i dirix --vector-queries q.jsonl > /dev/null 2> dir.err && fail "a folder named index.spx was opened"
grep -q "dirix/index.spx is not a regular file" dir.err || fail "message: $(cat dir.err)"
echo "ok: a second build is refused naming the holder; 2 races with exactly one winner installed;" \
     "a killed build's temporary file removed by the next build; index.spx as a folder reported"
exit 0
