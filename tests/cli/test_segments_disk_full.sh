#!/bin/sh
# Out of file space (RLIMIT_FSIZE stands in for a full disk, as in test_index_disk_full.sh) during a
# merge of many segments and during a bounded build (--memory): the writer fails with status 1 and
# an error naming the file, the previous generation answers exactly as before (every --algo), and
# nothing is left in the folder but the files its MANIFEST names. The tool ignores SIGXFSZ itself.
set -u
BIN=${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
T=$(mktemp -d /tmp/splade_cli_segfullXXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

gen() { # gen SEED FIRST COUNT
    awk -v s="$1" -v f="$2" -v n="$3" 'BEGIN { srand(s); for (d = f; d < f + n; d++) {
        printf "{\"id\": \"d%d\", \"vector\": {", d;
        for (i = 0; i < 30; i++) printf "%s\"t%d\": %.2f", (i ? ", " : ""), int(rand() * 150) + i * 150, int(rand() * 6 + 1) * 0.5;
        print "}}" } }'
}
awk 'BEGIN { srand(9); for (q = 0; q < 20; q++) { printf "{\"id\": \"q%d\", \"vector\": {\"t1\": 1.0", q;
     for (i = 0; i < 8; i++) printf ", \"t%d\": %.1f", 2 + i * 500 + int(rand() * 490), int(rand() * 3 + 1); print "}}" } }' > q.jsonl
answers() { # answers DIR OUT: the runs of every --algo
    : > "$2"
    for a in bmp wmaxscore bmm maxscore taat; do
        "$BIN" query -i "$1" --vector-queries q.jsonl -k 20 --algo $a >> "$2" || fail "query $a"
    done
}
only_named() {
    for f in $(ls -A ix); do
        [ "$f" = MANIFEST ] || grep -q "\"$f\"" ix/MANIFEST || fail "$1: left in the folder: $f"
    done
}

# ten segments of 600 documents (each file ~100 KB), merged into one that the limit does not allow
gen 1 0 600 > s0.jsonl
"$BIN" build --vectors s0.jsonl -o ix --quiet || fail "build"
for i in 1 2 3 4 5 6 7 8 9; do
    gen $((i + 1)) $((i * 600)) 600 > s$i.jsonl
    "$BIN" add --vectors s$i.jsonl -i ix --no-merge --quiet || fail "add $i"
done
n=$(grep -c '"file"' ix/MANIFEST)
[ "$n" = 10 ] || fail "expected 10 segments, got $n"
answers ix before.txt
cp ix/MANIFEST manifest.before
# 512 blocks: at most 512 KB (1024-byte blocks) or 256 KB; the merged file is ~1 MB, each segment < 256 KB
( trap - XFSZ; ulimit -f 512 && exec "$BIN" merge -i ix ) > full.out 2>&1
rc=$?
[ $rc -eq 1 ] || fail "merge over the file-size limit ended with status $rc, not 1: $(cat full.out)"
grep -q "\.index\.spx\.tmp-" full.out || fail "the error does not name the file: $(cat full.out)"
cmp -s ix/MANIFEST manifest.before || fail "the failed merge changed the MANIFEST"
answers ix after.txt
cmp -s before.txt after.txt || fail "the previous generation answers differently after the failed merge"
only_named "failed merge"
"$BIN" merge -i ix > /dev/null || fail "merge without the limit"
answers ix merged.txt
cmp -s before.txt merged.txt || fail "the merged index answers differently"

# a bounded build whose segments do not fit: the previous generation stays
cp ix/MANIFEST manifest.before
cat s*.jsonl > all.jsonl
( trap - XFSZ; ulimit -f 64 && exec "$BIN" build --vectors all.jsonl -o ix --memory 1M --quiet ) > full.out 2>&1
rc=$?
[ $rc -eq 1 ] || fail "bounded build over the file-size limit ended with status $rc, not 1: $(cat full.out)"
grep -q "\.index\.spx\.tmp-" full.out || fail "the error does not name the file: $(cat full.out)"
cmp -s ix/MANIFEST manifest.before || fail "the failed bounded build changed the MANIFEST"
answers ix after2.txt
cmp -s before.txt after2.txt || fail "the previous generation answers differently after the failed bounded build"
only_named "failed bounded build"
echo "ok: out of space during a merge and a bounded build: reported, previous generation intact, nothing left"
