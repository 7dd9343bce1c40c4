#!/bin/sh
# A build that runs out of file space (RLIMIT_FSIZE stands in for a full disk): the writer reserves
# the whole file before writing (fallocate), so the build fails with an error naming the file, the
# previous index keeps answering exactly as before, and no temporary file is left behind, not even
# an empty one. The tool itself ignores SIGXFSZ (src/cli/main.c): the test must not ignore it for
# it, or a build killed by the signal (no message, a 0-byte temporary left) would go unnoticed.
set -u
BIN=${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
T=$(mktemp -d /tmp/splade_cli_fullXXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

cat > small.jsonl <<'J'
{"id": "d1", "vector": {"cat": 1.5, "dog": 0.5}}
{"id": "d2", "vector": {"dog": 2.0, "bone": 1.0}}
J
printf '{"id": "q1", "vector": {"dog": 1.0}}\n' > q.jsonl
"$BIN" build --vectors small.jsonl -o ix --quiet || fail "first build"
"$BIN" query -i ix --vector-queries q.jsonl > before.trec || fail "query before"

# 3,000 documents x 40 terms: an index of a few hundred KB
awk 'BEGIN { for (d = 0; d < 3000; d++) { printf "{\"id\": \"b%d\", \"vector\": {", d;
             for (t = 0; t < 40; t++) printf "%s\"w%d\": %.2f", (t ? ", " : ""), (d * 7 + t * 13) % 5000, 0.5 + t % 7;
             print "}}" } }' > big.jsonl
# ulimit -f counts 512- or 1024-byte blocks depending on the shell: 64 blocks is at most 64 KB either way
( trap - XFSZ; ulimit -f 64 && exec "$BIN" build --vectors big.jsonl -o ix --quiet ) > full.out 2>&1
rc=$?
[ $rc -ne 0 ] || fail "the build over the file-size limit succeeded"
[ $rc -eq 1 ] || fail "the build over the file-size limit ended with status $rc (killed by a signal?), not 1: $(cat full.out)"
grep -q "index.spx.tmp-" full.out || fail "the error does not name the file: $(cat full.out)"
grep -qiE "cannot reserve|write failed|too large" full.out || fail "the error does not say what failed: $(cat full.out)"
"$BIN" query -i ix --vector-queries q.jsonl > after.trec || fail "query after the failed build"
cmp -s before.trec after.trec || fail "the previous index answers differently after the failed build"
left=$(ls -A ix | grep -v '^index.spx$')
[ -z "$left" ] || fail "left in the index folder (temporary or lock file, even empty): $left"

# the same build without the limit works (the failure was the limit, not the input)
"$BIN" build --vectors big.jsonl -o ix --quiet || fail "build without the limit"
echo "ok: out-of-space build reported, previous index intact, nothing left behind"
