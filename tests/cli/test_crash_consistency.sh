#!/bin/sh
# Crash consistency of `build` (docs/FORMAT.md: "A build killed at any point ... leaves the previous
# index.spx untouched"): 24 builds killed with SIGKILL, half at delays spread from 5 ms to a measured
# build's duration, half 0-36 ms after the build's temporary index file .index.spx.tmp-<pid>-<random>
# appeared (write, fsync, verify, rename). After every kill the index folder holds either the
# previous index.spx, byte for byte,
# answering exactly as before, or (kill too late) the complete new one, answering like a reference
# build of the same input; never a half-written file. Also: a killed first build leaves no
# index.spx behind; the next clean build removes the killed builds' temporaries, and no temporary
# file is left in the index folder or its parent. (test_index_vectors.sh has a 3-kill version.)
set -u
BIN=${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
T=$(mktemp -d /tmp/splade_cli_crashXXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
TRIALS=${SPLADE_CRASH_TRIALS:-24}

cat > small.jsonl <<'J'
{"id": "s1", "vector": {"t1": 1.5, "t5001": 0.5}}
{"id": "s2", "vector": {"t1": 0.2, "t10002": 2.0}}
{"id": "s3", "vector": {"t20003": 1.0}}
J
# queries that hit both the small and the big collection
awk 'BEGIN { srand(11); for (q = 0; q < 20; q++) { printf "{\"id\": \"q%d\", \"vector\": {\"t1\": 1.0", q;
     for (i = 0; i < 6; i++) printf ", \"t%d\": %.2f", int(rand() * 5000) + i * 5000, rand() + 0.1; print "}}" } }' > q.jsonl
# big enough for a build of ~0.5-1 s (more under load); sized down if that is much slower here
N=${SPLADE_CRASH_DOCS:-60000}
awk -v n="$N" 'BEGIN { srand(7); for (d = 0; d < n; d++) { printf "{\"id\": \"big%d\", \"vector\": {", d;
     for (i = 0; i < 12; i++) printf "%s\"t%d\": %.3f", (i ? ", " : ""), int(rand() * 5000) + i * 5000, rand() * 3 + 0.01;
     print "}}" } }' > big.jsonl

# reference answers of both indexes, and the duration of a full build
"$BIN" build --vectors big.jsonl -o ref --quiet > /dev/null || fail "reference build"
"$BIN" query -i ref --vector-queries q.jsonl -k 10 > new.trec || fail "reference query"
timed_build() {
    start=$(date +%s.%N)
    "$BIN" build --vectors big.jsonl -o ref --quiet > /dev/null || fail "timed build"
    end=$(date +%s.%N)
    dur=$(echo "$start $end" | awk '{ printf "%.3f", $2 - $1 }')
}
timed_build
if [ "$(echo "$dur" | awk '{ print ($1 > 1.5) }')" = 1 ]; then
    # slow here (sanitizers, load): fewer documents, so that the test stays well under a minute
    head -n "$(echo "$N $dur" | awk '{ printf "%d", $1 * 1.0 / $2 }')" big.jsonl > big.cut && mv big.cut big.jsonl
    "$BIN" build --vectors big.jsonl -o ref --quiet > /dev/null || fail "reference build"
    "$BIN" query -i ref --vector-queries q.jsonl -k 10 > new.trec || fail "reference query"
    timed_build
fi
mkdir -p parent && IX=parent/idx
"$BIN" build --vectors small.jsonl -o $IX --quiet > /dev/null || fail "small build"
"$BIN" query -i $IX --vector-queries q.jsonl -k 10 > old.trec || fail "small query"
[ -s old.trec ] && [ -s new.trec ] || fail "empty reference runs"
cmp -s old.trec new.trec && fail "old and new index answer alike: the test could not tell them apart"
cp $IX/index.spx old.spx

killed=0 finished=0 leftover=0
i=0
while [ $i -lt $TRIALS ]; do
    # delays computed before the build starts, so that nothing forks between detection and kill
    if [ $i -lt $((TRIALS / 2)) ]; then
        # by time: 5 ms, then up the span to the whole build time (quadratic: more early kills)
        delay=$(echo "$i $TRIALS $dur" | awk '{ f = $1 / ($2 / 2 - 1); printf "%.3f", 0.005 + f * f * $3 }')
    else
        # by phase: once this build's temporary file appears (writing, fsync, verification,
        # rename), at once for the first 3 trials, then 4-36 ms later
        delay=$(echo "$i $TRIALS" | awk '{ j = $1 - $2 / 2 - 2; printf "%.3f", (j > 0 ? j : 0) * 0.004 }')
    fi
    "$BIN" build --vectors big.jsonl -o $IX --quiet > /dev/null 2>&1 & pid=$!
    if [ $i -lt $((TRIALS / 2)) ]; then
        sleep "$delay"
    else
        # (builtins only: `set --` expands this build's own temporary name, .index.spx.tmp-<pid>-<random>)
        while set -- $IX/.index.spx.tmp-$pid-*; [ ! -e "$1" ] && kill -0 $pid 2>/dev/null; do :; done
        [ "$delay" = 0.000 ] || sleep "$delay"
        delay="write+$delay"
    fi
    if kill -9 $pid 2>/dev/null; then killed=$((killed + 1)); fi
    wait $pid 2>/dev/null
    set -- $IX/.index.spx.tmp-$pid-*
    [ -e "$1" ] && leftover=$((leftover + 1))
    "$BIN" query -i $IX --vector-queries q.jsonl -k 10 > got.trec 2> err.txt ||
        fail "trial $i (kill at ${delay}s): index does not open: $(cat err.txt)"
    if cmp -s $IX/index.spx old.spx; then
        cmp -s got.trec old.trec || fail "trial $i: same file, different answers"
    else
        # the kill came after the rename: the new index, complete
        cmp -s got.trec new.trec || fail "trial $i (kill at ${delay}s): index is neither the old nor the new one"
        finished=$((finished + 1))
        cp old.spx $IX/index.spx  # back to the old one for the next trial
    fi
    i=$((i + 1))
done
[ $leftover -gt 0 ] || fail "no kill landed while the temporary index was being written"
[ $killed -ge $((TRIALS / 2)) ] || fail "only $killed of $TRIALS builds were killed midway (builds too fast?)"

# a killed first build: no index appears
for delay in 0.005 0.05 $(echo "$dur" | awk '{ printf "%.3f", $1 / 2 }'); do
    "$BIN" build --vectors big.jsonl -o fresh --quiet > /dev/null 2>&1 & pid=$!
    sleep $delay
    kill -9 $pid 2>/dev/null && killed=$((killed + 1))
    wait $pid 2>/dev/null
    if [ -f fresh/index.spx ]; then
        "$BIN" query -i fresh --vector-queries q.jsonl -k 10 | cmp -s - new.trec ||
            fail "killed first build left a partial index.spx"
        rm -rf fresh
    else
        "$BIN" query -i fresh --vector-queries q.jsonl 2> err.txt && fail "query found an index after a killed first build"
        grep -q "no index here" err.txt || fail "message: $(cat err.txt)"
    fi
done

# a clean build cleans up after the killed ones (their temporaries and the lock file they held): no
# temporary file in the folder or its parent
"$BIN" build --vectors small.jsonl -o $IX --quiet > /dev/null || fail "clean rebuild"
"$BIN" query -i $IX --vector-queries q.jsonl -k 10 | cmp -s - old.trec || fail "clean rebuild answers differently"
[ "$(ls -A $IX)" = "index.spx" ] || fail "left in the index folder: $(ls -A $IX)"
[ "$(ls -A parent)" = "idx" ] || fail "left in the parent folder: $(ls -A parent)"
echo "ok: $killed builds killed ($TRIALS trials over a ${dur}s build, $leftover during the write phase," \
     "$finished finished first), previous index intact each time, temporaries cleaned"
exit 0
