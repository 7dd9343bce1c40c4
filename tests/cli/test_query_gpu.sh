#!/bin/sh
# query --device cuda|auto with a batch searches on the GPU (issue #14 item 4): the TREC run is byte
# for byte the CPU's (--device cpu) on a --vectors index of three segments with deletions and score
# ties, for k = 1, 10 and 1000 (more than the live documents). Without a usable GPU (this build or
# this machine) the run is the same and stderr holds exactly one line, the fallback notice; with one,
# stderr is empty. Bad input: an unknown --device is a usage error (exit 2) naming the value; the
# approximate options stay on the CPU (a notice, and the CPU's approximate run). No model needed.
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
unset SPLADE_INDEX
T=$(mktemp -d /tmp/splade_cli_qgpuXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$T" || exit 1
gen() { # seed first count prefix: documents with 8 terms of coarse weights (many equal scores)
    awk -v s="$1" -v f="$2" -v n="$3" 'BEGIN { srand(s); for (d = f; d < f + n; d++) {
        printf "{\"id\": \"d%d\", \"vector\": {", d;
        for (i = 0; i < 8; i++) printf "%s\"t%d\": %.1f", (i ? ", " : ""), int(rand() * 60) + i * 60, int(rand() * 3 + 1) * 0.5;
        print "}}" } }'
}
gen 1 0 400 > a.jsonl
gen 2 400 150 > b.jsonl
gen 3 550 100 > c.jsonl
awk 'BEGIN { srand(7); for (q = 0; q < 30; q++) { printf "{\"id\": \"q%d\", \"vector\": {\"t%d\": 1.0", q, 420 + q;
     for (i = 0; i < q % 7; i++) printf ", \"t%d\": %.1f", i * 60 + int(rand() * 60), int(rand() * 2 + 1); print "}}" } }
     END { print "{\"id\": \"empty\", \"vector\": {}}"; print "{\"id\": \"unknown\", \"vector\": {\"nope\": 2.0}}" }' \
     </dev/null > q.jsonl
"$BIN" build --vectors a.jsonl -o ix --quiet || fail "build"
"$BIN" add --vectors b.jsonl -i ix --no-merge --quiet || fail "add b"
"$BIN" add --vectors c.jsonl -i ix --no-merge --quiet || fail "add c"
"$BIN" delete -i ix d3 d17 d401 d402 d560 d600 --quiet || fail "delete"

gpu=$("$BIN" query -i ix --vector-queries q.jsonl -k 1 --device cuda 2>&1 >/dev/null)
for k in 1 10 1000; do
    "$BIN" query -i ix --vector-queries q.jsonl -k $k --device cpu --output cpu.trec 2>err.cpu || fail "cpu k=$k: $(cat err.cpu)"
    [ -s cpu.trec ] || fail "empty CPU run"
    [ -s err.cpu ] && fail "--device cpu wrote to stderr: $(cat err.cpu)"
    for d in cuda auto; do
        "$BIN" query -i ix --vector-queries q.jsonl -k $k --device $d --output gpu.trec 2>err || fail "$d k=$k: $(cat err)"
        cmp -s cpu.trec gpu.trec || fail "--device $d k=$k: run differs from the CPU's: $(diff cpu.trec gpu.trec | head -4)"
        if [ -n "$gpu" ]; then # no usable GPU here: one line, the notice
            [ "$(wc -l < err)" -eq 1 ] || fail "--device $d: want one notice line, got: $(cat err)"
            grep -q "^splade-index query: GPU search unavailable (.*); searching on the CPU$" err ||
                fail "--device $d: notice: $(cat err)"
        else
            [ -s err ] && fail "--device $d on a GPU wrote to stderr: $(cat err)"
        fi
    done
done
grep -q "^q5 Q0" cpu.trec || fail "no hits for q5"
grep -q "^empty \|^unknown " cpu.trec && fail "hits for the empty / unknown-term queries"

# bad input
"$BIN" query -i ix --vector-queries q.jsonl --device gpux > out 2> err; rc=$?
[ $rc -eq 2 ] || fail "--device gpux: exit $rc (want 2)"
grep -q 'device must be auto, cpu or cuda, not "gpux"' err || fail "--device gpux: $(cat err)"
"$BIN" query -i ix --vector-queries q.jsonl -k 10 --query-cut 2 --device cpu --output cpu.trec || fail "query-cut cpu"
"$BIN" query -i ix --vector-queries q.jsonl -k 10 --query-cut 2 --device cuda --output gpu.trec 2>err || fail "query-cut cuda"
cmp -s cpu.trec gpu.trec || fail "--query-cut with --device cuda: not the CPU's approximate run"
grep -q "CPU-only" err || fail "--query-cut with --device cuda: no notice: $(cat err)"
echo "ok"
