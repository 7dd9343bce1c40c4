#!/bin/sh
# Crash safety of the living index (docs/FORMAT.md, "Segments and the manifest"): `add`, `delete` and
# `merge` killed with SIGKILL at spread delays, 20 trials each (SPLADE_SEG_CRASH_TRIALS). After every
# kill the index opens at the generation before the operation or the one after it, and a fixed query
# set's TREC run is byte-identical to that generation's (for add and delete the two runs differ; a
# merge answers alike before and after, by design), never anything else; after the next successful
# operation (a
# delete of an unknown id, which takes the lock and cleans up) the folder holds only MANIFEST and
# the files it names: no segment, deletion file, temporary or lock of the killed writer.
set -u
BIN=${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
T=$(mktemp -d /tmp/splade_cli_segcrashXXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
TRIALS=${SPLADE_SEG_CRASH_TRIALS:-20}
N=${SPLADE_SEG_CRASH_DOCS:-20000}

gen() { # gen SEED FIRST COUNT
    awk -v s="$1" -v f="$2" -v n="$3" 'BEGIN { srand(s); for (d = f; d < f + n; d++) { printf "{\"id\": \"d%d\", \"vector\": {", d;
        for (i = 0; i < 10; i++) printf "%s\"t%d\": %.2f", (i ? ", " : ""), int(rand() * 500) + i * 500, int(rand() * 6 + 1) * 0.5;
        print "}}" } }'
}
gen 1 0 "$N" > a.jsonl
gen 2 "$N" "$N" > b.jsonl
gen 3 $((2 * N)) "$N" > c.jsonl
awk -v n="$N" 'BEGIN { srand(4); for (i = 0; i < 400; i++) printf "d%d\n", int(rand() * 2 * n) }' > del.txt
awk 'BEGIN { srand(5); for (q = 0; q < 20; q++) { printf "{\"id\": \"q%d\", \"vector\": {\"t1\": 1.0", q;
     for (i = 0; i < 6; i++) printf ", \"t%d\": %.1f", int(rand() * 5000), int(rand() * 3 + 1); print "}}" } }' > q.jsonl

# the starting state: two segments, some deletions
"$BIN" build --vectors a.jsonl -o base --quiet || fail "build"
"$BIN" add --vectors b.jsonl -i base --no-merge --quiet || fail "add"
awk 'NR % 7 == 0' del.txt | "$BIN" delete -i base --ids - --quiet 2> /dev/null || fail "delete"
"$BIN" query -i base --vector-queries q.jsonl -k 20 --output before.trec || fail "query"
generation() { awk -F': *' '/"generation"/ { sub(/,.*/, "", $2); print $2 }' "$1/MANIFEST"; }
g_before=$(generation base)

run_op() { # run_op OP DIR (exec: in a background subshell, $! is then the writer itself)
    case $1 in
        add) exec "$BIN" add --vectors c.jsonl -i "$2" --no-merge --quiet ;;
        delete) exec "$BIN" delete -i "$2" --ids del.txt --quiet 2> /dev/null ;;
        merge) exec "$BIN" merge -i "$2" --quiet ;;
    esac
}
no_strays() {
    for f in $(ls -A ix); do
        [ "$f" = MANIFEST ] || grep -q "\"$f\"" ix/MANIFEST || fail "$1: stray file ix/$f after the next operation"
    done
}

total=0
for op in add delete merge; do
    rm -rf ix && cp -a base ix
    start=$(date +%s.%N)
    (run_op $op ix) || fail "$op"
    end=$(date +%s.%N)
    dur=$(echo "$start $end" | awk '{ printf "%.3f", $2 - $1 }')
    "$BIN" query -i ix --vector-queries q.jsonl -k 20 --output after.trec || fail "query after $op"
    g_after=$(generation ix)
    [ "$g_after" -gt "$g_before" ] || fail "$op did not install a generation"
    if [ $op = merge ]; then
        cmp -s before.trec after.trec || fail "merge changed the answers"
    else
        cmp -s before.trec after.trec && fail "$op: the runs before and after are the same: the test could not tell"
    fi
    killed=0 old=0 new=0 i=0 temps=0
    while [ $i -lt "$TRIALS" ]; do
        rm -rf ix && cp -a base ix
        # by time: 2 ms up to 1.2 x the operation's duration, more of them early (open, checks, writing);
        # add and merge, half of the trials: by phase, 0-36 ms after the new segment's temporary file
        # appeared (writing, fsync, verification, rename, MANIFEST, cleanup)
        phase=0
        [ $op != delete ] && [ $i -ge $((TRIALS / 2)) ] && phase=1
        if [ $phase = 0 ]; then
            delay=$(echo "$i $TRIALS $dur" | awk '{ f = $1 / ($2 - 1); printf "%.3f", 0.002 + f * f * 1.2 * $3 }')
        else
            delay=$(echo "$i $TRIALS" | awk '{ j = $1 - $2 / 2 - 1; printf "%.3f", (j > 0 ? j : 0) * 0.004 }')
        fi
        (run_op $op ix) & pid=$!
        if [ $phase = 1 ]; then
            while set -- ix/.index.spx.tmp-$pid-*; [ ! -e "$1" ] && kill -0 $pid 2>/dev/null; do :; done
            [ -e "$1" ] && temps=$((temps + 1))
            [ "$delay" = 0.000 ] || sleep "$delay"
        else
            sleep "$delay"
        fi
        kill -9 $pid 2>/dev/null && killed=$((killed + 1))
        wait $pid 2>/dev/null
        "$BIN" query -i ix --vector-queries q.jsonl -k 20 --output got.trec 2> err.txt ||
            fail "$op trial $i (kill at ${delay}s): the index does not open: $(cat err.txt)"
        g=$(generation ix)
        if [ "$g" = "$g_before" ]; then state=before old=$((old + 1));
        elif [ "$g" = "$g_after" ]; then state=after new=$((new + 1));
        else fail "$op trial $i (kill at ${delay}s): generation $g, neither $g_before nor $g_after"; fi
        cmp -s got.trec $state.trec ||
            fail "$op trial $i (kill at ${delay}s): generation $g does not answer as it did $state the operation"
        "$BIN" delete -i ix no-such-document --quiet 2> err.txt || fail "$op trial $i: the next operation failed: $(cat err.txt)"
        no_strays "$op trial $i"
        "$BIN" query -i ix --vector-queries q.jsonl -k 20 | cmp -s - $state.trec ||
            fail "$op trial $i: the cleanup changed the answers"
        i=$((i + 1))
    done
    [ $killed -ge $((TRIALS / 2)) ] || fail "$op: only $killed of $TRIALS runs were killed midway (too fast?)"
    [ $old -gt 0 ] || fail "$op: no kill landed before the new generation was installed"
    [ $op = delete ] || [ $temps -gt 0 ] || fail "$op: no kill landed while the new segment was being written"
    echo "$op: $killed of $TRIALS killed (a ${dur}s operation; $temps while writing the new segment)," \
         "$old answered as before, $new as after"
    total=$((total + killed))
done
echo "ok: $total writers killed; every index answered as before or after, no strays after the next operation"
