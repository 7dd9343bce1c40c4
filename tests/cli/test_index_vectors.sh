#!/bin/sh
# End-to-end build/query/eval from precomputed vectors (no model needed): default index location,
# bad input (malformed lines, duplicate ids, damaged or foreign-version index files) reported with
# the line or section at fault while the previous index keeps answering, and a build killed with
# SIGKILL midway leaving the previous index intact.
set -u
BIN=${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
T=$(mktemp -d /tmp/splade_cli_vecXXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

cat > v.jsonl <<'J'
{"id": "d1", "vector": {"cat": 1.5, "dog": 0.5}, "contents": "cats and dogs"}
{"id": "d2", "vector": {"dog": 2.0, "bone": 1.0}, "content": "a dog with a bone"}
{"id": 3, "vector": {}}
{"_id": "d4", "vector": {"cat": 0.2, "fish": 3}}
J
cat > q.jsonl <<'J'
{"id": "q1", "vector": {"dog": 1.0, "unknown": 3.0}}
{"id": "q2", "vector": {"cat": 1.0, "dog": 1.0}}
{"id": "q3", "vector": {}}
J

# default location: ./splade.idx, no flag needed on either side
"$BIN" build --vectors v.jsonl > build.out || fail "build"
grep -q "indexed 4 documents, 6 postings" build.out || fail "summary: $(cat build.out)"
[ -f splade.idx/index.spx ] || fail "no ./splade.idx/index.spx"
"$BIN" query --vector-queries q.jsonl -k 3 > run.trec || fail "query"
expected="q1 Q0 d2 1
q1 Q0 d1 2
q2 Q0 d1 1
q2 Q0 d2 2
q2 Q0 d4 3"
got=$(cut -d' ' -f1-4 run.trec | sort)
[ "$got" = "$(echo "$expected" | sort)" ] || fail "run: $got"
# $SPLADE_INDEX is honoured by build and query
SPLADE_INDEX=$T/env.idx "$BIN" build --vectors v.jsonl --quiet || fail "build with SPLADE_INDEX"
[ -f env.idx/index.spx ] || fail "SPLADE_INDEX ignored by build"
SPLADE_INDEX=$T/env.idx "$BIN" query --vector-queries q.jsonl -k 3 > run2.trec || fail "query SPLADE_INDEX"
cmp -s run.trec run2.trec || fail "SPLADE_INDEX index answers differently"
# threads do not change results
"$BIN" query --vector-queries q.jsonl -k 3 --threads 3 --algo taat > run3.trec || fail "threads"
cmp -s run.trec run3.trec || fail "threads/taat changed the run"
for a in auto wtaat bmp; do # every exact method, and approximate options that change nothing here
    "$BIN" query --vector-queries q.jsonl -k 3 --algo $a > run4.trec || fail "--algo $a"
    cmp -s run.trec run4.trec || fail "--algo $a changed the run"
done
"$BIN" query --vector-queries q.jsonl -k 3 --query-cut 1000 --bound-factor 1 > run5.trec || fail "approximate options"
cmp -s run.trec run5.trec || fail "--query-cut 1000 --bound-factor 1 changed the run"
# rescoring with a cut that keeps every term: exact (candidates by the full score, rescored exactly)
"$BIN" query --vector-queries q.jsonl -k 3 --query-cut 1000 --rescore 1 > run6.trec || fail "--rescore"
cmp -s run.trec run6.trec || fail "--query-cut 1000 --rescore 1 changed the run"
# ... and with a posting budget covering every posting
"$BIN" query --vector-queries q.jsonl -k 3 --query-cut 1000 --rescore 1 --budget 2147483647 > run7.trec || fail "--budget"
cmp -s run.trec run7.trec || fail "--query-cut 1000 --rescore 1 --budget 2147483647 changed the run"
# a recall target of 1: the setting it picks (or exact) answers every query with the exact top 3's scores
"$BIN" query --vector-queries q.jsonl -k 3 --recall-target 1 > run8.trec 2> cal.err || fail "--recall-target: $(cat cal.err)"
grep -q "^splade-index query: --recall-target 1: " cal.err || fail "--recall-target: said nothing: $(cat cal.err)"
cut -d' ' -f1,4,5 run.trec > scores.exact && cut -d' ' -f1,4,5 run8.trec > scores.cal
cmp -s scores.exact scores.cal || fail "--recall-target 1: other scores than the exact run"

printf 'query-id\tcorpus-id\tscore\nq1\td2\t1\nq2\td1\t2\nq2\td4\t1\n' > qrels.tsv
"$BIN" eval --run run.trec --qrels qrels.tsv --metrics ndcg@10,mrr@10 > eval.out || fail "eval"
grep -q "^mrr@10 *all *1.000000" eval.out || fail "eval: $(cat eval.out)"

# malformed line: error with the line number, nothing replaced; --skip-invalid counts it
cp v.jsonl bad.jsonl
echo '{"id": "d9", "vector": {"x": 1' >> bad.jsonl
echo '{"id": "d10", "vector": {"cat": 1}}' >> bad.jsonl
"$BIN" build --vectors bad.jsonl 2> err.txt && fail "malformed input accepted"
grep -q "bad.jsonl:5: invalid JSON" err.txt || fail "message: $(cat err.txt)"
"$BIN" query --vector-queries q.jsonl -k 3 | cmp -s - run.trec || fail "old index lost after malformed input"
"$BIN" build --vectors bad.jsonl --skip-invalid -o skip.idx > skip.out 2>&1 || fail "skip-invalid"
grep -q "indexed 5 documents.* 1 invalid lines skipped" skip.out || fail "skip summary: $(cat skip.out)"

# wrong field types and duplicate ids
echo '{"id": "d5", "vector": {"cat": "high"}}' > badw.jsonl
"$BIN" build --vectors badw.jsonl 2> err.txt && fail "string weight accepted"
grep -q 'badw.jsonl:1: weight of token "cat"' err.txt || fail "message: $(cat err.txt)"
echo '{"id": "d5", "contents": "no vector"}' > nov.jsonl
"$BIN" build --vectors nov.jsonl 2> err.txt && fail "missing vector accepted"
grep -q 'nov.jsonl:1: missing or non-object field "vector"' err.txt || fail "message: $(cat err.txt)"
cp v.jsonl dup.jsonl
echo '{"id": "d2", "vector": {"cat": 1}}' >> dup.jsonl
"$BIN" build --vectors dup.jsonl --skip-invalid 2> err.txt && fail "duplicate id accepted"
grep -q 'dup.jsonl:5: duplicate id "d2" (first seen on line 2)' err.txt || fail "message: $(cat err.txt)"
"$BIN" query --vector-queries q.jsonl -k 3 | cmp -s - run.trec || fail "old index lost after duplicate"

# damaged index files: checksum / truncation / version errors, no crash
mkdir -p dmg && cp splade.idx/index.spx dmg/index.spx
size=$(wc -c < dmg/index.spx)
printf '\377' | dd of=dmg/index.spx bs=1 seek=$((size - 30)) conv=notrunc 2>/dev/null
"$BIN" query -i dmg --vector-queries q.jsonl 2> err.txt; [ $? -eq 1 ] || fail "corrupted index accepted"
grep -q "checksum mismatch in section" err.txt || fail "message: $(cat err.txt)"
head -c $((size / 2)) splade.idx/index.spx > dmg/index.spx
"$BIN" query -i dmg --vector-queries q.jsonl 2> err.txt; [ $? -eq 1 ] || fail "truncated index accepted"
grep -q "truncated" err.txt || fail "message: $(cat err.txt)"
cp splade.idx/index.spx dmg/index.spx
printf '\011' | dd of=dmg/index.spx bs=1 seek=8 conv=notrunc 2>/dev/null
"$BIN" query -i dmg --vector-queries q.jsonl 2> err.txt; [ $? -eq 1 ] || fail "unknown version accepted"
grep -q "index format version 9 is not supported" err.txt || fail "message: $(cat err.txt)"
"$BIN" query -i nowhere --vector-queries q.jsonl 2> err.txt; [ $? -eq 1 ] || fail "missing index accepted"
grep -q "no index here" err.txt || fail "message: $(cat err.txt)"

# SIGKILL during a build: the previous index must still answer, byte for byte
awk 'BEGIN { srand(7); for (d = 0; d < 300000; d++) { printf "{\"id\": \"big%d\", \"vector\": {", d;
     for (i = 0; i < 12; i++) printf "%s\"t%d\": %.3f", (i ? ", " : ""), int(rand() * 5000) + i * 5000, rand() * 3 + 0.01;
     print "}}" } }' > big.jsonl
cp splade.idx/index.spx before.spx
killed=0
for delay in 0.3 0.8 1.5; do
    "$BIN" build --vectors big.jsonl --quiet & pid=$!
    sleep $delay
    if kill -9 $pid 2>/dev/null; then killed=$((killed + 1)); fi
    wait $pid 2>/dev/null
    if cmp -s before.spx splade.idx/index.spx; then :; else
        # the build may have completed before the kill: then the index must be the new one, whole
        "$BIN" query --vector-queries q.jsonl -k 3 > /dev/null || fail "index broken after kill at ${delay}s"
        cp splade.idx/index.spx before.spx
        echo "build finished before the kill at ${delay}s"
    fi
done
[ $killed -gt 0 ] || fail "no build was killed midway (too fast?)"
cmp -s before.spx splade.idx/index.spx || fail "index changed by killed builds"
"$BIN" build --vectors v.jsonl --quiet || fail "rebuild after kills"
ls -a splade.idx | grep -q tmp- && fail "stale temporary file left: $(ls -a splade.idx)"
"$BIN" query --vector-queries q.jsonl -k 3 | cmp -s - run.trec || fail "index after rebuild"
# --threads: the inversion (reordering, radix passes, encoding) splits work over threads, and the
# file must not depend on it: 3,000 documents x 40 terms (120k postings, above the 65,536 under
# which one thread is used; >= 1,024 documents, so they are reordered), built with 1, 2 and 3 threads
# and the same SOURCE_DATE_EPOCH, byte-identical.
awk 'BEGIN { s = 12345; for (d = 0; d < 3000; d++) { printf "{\"id\": \"m%d\", \"vector\": {", d;
      for (i = 0; i < 40; i++) { s = (s * 1103515245 + 12345) % 2147483648; t = s % 50;
        s = (s * 1103515245 + 12345) % 2147483648; printf "%s\"w%d_%d\": %.4f", i ? ", " : "", t, i, 0.01 + (s % 10000) / 3000 }
      print "}}" } }' > many.jsonl
for th in 1 2 3; do
    SOURCE_DATE_EPOCH=1700000000 "$BIN" build --vectors many.jsonl -o many$th.idx --threads $th --quiet || fail "build --threads $th"
done
"$BIN" query -i many1.idx --vector-queries q.jsonl -k 3 > /dev/null || fail "query the threaded build"
cmp many1.idx/index.spx many2.idx/index.spx || fail "--threads 1 and 2 gave different index files"
cmp many1.idx/index.spx many3.idx/index.spx || fail "--threads 1 and 3 gave different index files"
SOURCE_DATE_EPOCH=1700000000 "$BIN" build --vectors many.jsonl -o manyd.idx --quiet || fail "build, default threads"
cmp many1.idx/index.spx manyd.idx/index.spx || fail "default threads gave a different index file"
echo "ok: vectors build/query/eval, bad input, damaged index, SIGKILL ($killed killed builds), --threads 1/2/3 identical"
exit 0
