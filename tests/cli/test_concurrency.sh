#!/bin/sh
# Concurrency of queries (include/splade/query.h: "results do not depend on the thread count";
# docs/FORMAT.md: readers mmap read-only and keep a valid mapping after a rebuild replaced the file):
#  1. batch queries with --threads 1, 2, 4, 8 and every method give the same run, byte for byte;
#  2. 4 background query processes + 1 in the foreground on the same index give the serial run;
#  3. readers that opened the index before a rebuild replaced it (held at that point by a FIFO as
#     their query file) answer from the old index after the rename; readers started after it see
#     the new one; readers racing with repeated rebuilds get one of the two runs whole, never an
#     error or a mix.
# SciFact-like size: 5,000 documents (Zipf-like terms, 60 per document), 300 queries of 20 terms.
set -u
BIN=${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
T=$(mktemp -d /tmp/splade_cli_concXXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

gen() { # seed n_docs prefix
    awk -v seed="$1" -v n="$2" -v p="$3" 'BEGIN { srand(seed); for (d = 0; d < n; d++) {
        printf "{\"id\": \"%s%d\", \"vector\": {", p, d; delete seen; m = 0;
        for (i = 0; i < 60; i++) { t = int(8000 * rand() ^ 3); if (t in seen) continue; seen[t] = 1;
            printf "%s\"w%d\": %.3f", (m++ ? ", " : ""), t, rand() * 2 + 0.01 }
        print "}}" } }'
}
gen 1 5000 a > old.jsonl
gen 2 5000 b > new.jsonl
awk 'BEGIN { srand(5); for (q = 0; q < 300; q++) { printf "{\"id\": \"q%d\", \"vector\": {", q; delete seen; m = 0;
     for (i = 0; i < 20; i++) { t = int(8000 * rand() ^ 2); if (t in seen) continue; seen[t] = 1;
         printf "%s\"w%d\": %.2f", (m++ ? ", " : ""), t, rand() + 0.05 }
     print "}}" } }' > q.jsonl
"$BIN" build --vectors old.jsonl -o ix --quiet > /dev/null || fail "build"
"$BIN" build --vectors new.jsonl -o newref --quiet > /dev/null || fail "build new"
"$BIN" query -i ix --vector-queries q.jsonl -k 100 --threads 1 --algo taat > ref.trec || fail "serial query"
"$BIN" query -i newref --vector-queries q.jsonl -k 100 --threads 1 --algo taat > newref.trec || fail "new query"
[ "$(wc -l < ref.trec)" -ge 20000 ] || fail "reference run too small: $(wc -l < ref.trec) lines"
cmp -s ref.trec newref.trec && fail "old and new index answer alike: the test could not tell them apart"

# 1. threads x methods
runs=0
for algo in taat bmm maxscore bmp wmaxscore; do
    for th in 1 2 4 8; do
        "$BIN" query -i ix --vector-queries q.jsonl -k 100 --threads $th --algo $algo > t.trec || fail "$algo/$th"
        cmp -s t.trec ref.trec || fail "--algo $algo --threads $th differs from the serial run"
        runs=$((runs + 1))
    done
done

# 2. several processes on one index at once
pids=""
for p in 1 2 3 4; do
    "$BIN" query -i ix --vector-queries q.jsonl -k 100 --threads 2 --algo bmp > p$p.trec 2> p$p.err & pids="$pids $!"
done
"$BIN" query -i ix --vector-queries q.jsonl -k 100 --threads 2 --algo bmm > p0.trec || fail "foreground query"
for p in $pids; do wait $p || fail "background query failed"; done
for p in 0 1 2 3 4; do cmp -s p$p.trec ref.trec || fail "process $p answered differently: $(cat p$p.err 2>/dev/null)"; done

# 3a. readers holding the old index across a rebuild: a reader maps the index, then blocks opening
# its FIFO query file until we write the queries, after the rename.
pids=""
for p in 1 2 3; do
    mkfifo f$p
    "$BIN" query -i ix --vector-queries f$p -k 100 --algo bmp > held$p.trec 2> held$p.err & pids="$pids $!"
done
for p in $pids; do # index mapped (so the FIFO open below cannot hang on a reader that failed)
    n=0
    until grep -q 'ix/index.spx' /proc/$p/maps 2>/dev/null; do
        kill -0 $p 2>/dev/null || fail "reader $p exited before mapping the index: $(cat held*.err)"
        n=$((n + 1)); [ $n -lt 1000 ] || fail "reader $p did not map the index within 10 s"
        sleep 0.01
    done
done
exec 4> f1 5> f2 6> f3
"$BIN" build --vectors new.jsonl -o ix --quiet > /dev/null || fail "rebuild under readers"
"$BIN" query -i ix --vector-queries q.jsonl -k 100 > after.trec || fail "query after rebuild"
cmp -s after.trec newref.trec || fail "a reader started after the rebuild does not see the new index"
cat q.jsonl >&4; cat q.jsonl >&5; cat q.jsonl >&6
exec 4>&- 5>&- 6>&-
for p in $pids; do wait $p || fail "held reader failed"; done
for p in 1 2 3; do
    cmp -s held$p.trec ref.trec || fail "reader $p, opened before the rebuild, did not answer from the old index: $(cat held$p.err)"
done

# 3b. readers racing with rebuilds (old, new, old, new): each run is one index's answer, whole
pids=""
for p in 1 2 3 4; do
    (r=0; while [ $r -lt 2 ] || [ ! -f rebuilds.done ]; do r=$((r + 1))
        "$BIN" query -i ix --vector-queries q.jsonl -k 100 --threads 1 > race$p.$r.trec 2> race$p.$r.err ||
            echo "query failed: $(cat race$p.$r.err)" > race$p.$r.trec; done) & pids="$pids $!"
done
for input in old new old new; do
    "$BIN" build --vectors $input.jsonl -o ix --quiet > /dev/null || fail "rebuild $input during queries"
done
touch rebuilds.done
for p in $pids; do wait $p; done
n_old=0 n_new=0
for f in race*.trec; do
    if cmp -s $f ref.trec; then n_old=$((n_old + 1))
    elif cmp -s $f newref.trec; then n_new=$((n_new + 1))
    else fail "$f is neither the old nor the new index's run: $(head -2 $f)"; fi
done
"$BIN" query -i ix --vector-queries q.jsonl -k 100 | cmp -s - newref.trec || fail "final index is not the last build"
echo "ok: $runs thread/method runs identical; 5 concurrent processes; 3 readers kept the old index across a" \
     "rebuild; $((n_old + n_new)) runs racing 4 rebuilds whole ($n_old old, $n_new new)"
exit 0
