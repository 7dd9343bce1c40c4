#!/bin/sh
# What `build` reads (issue 9, items 2, 4, 5, 12): a NUL byte, an over-long line, a read error
# (a directory) and a \u0000 escape fail naming FILE:LINE and leave the previous index answering
# identically; an empty input or one whose every line --skip-invalid dropped fails instead of
# installing an empty index; gzip input reads like the plain file, other compression formats are
# named; a byte-order mark is skipped; ids breaking the id rule fail naming FILE:LINE and the
# field in build (corpus and --vectors), encode --input, query --queries and --vector-queries.
# Model paths use cache/rand-h96 (written by `make models`, no network) and skip without it.
set -u
ROOT=$(pwd)
BIN=$ROOT/${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
MODEL=$ROOT/cache/rand-h96
T=$(mktemp -d /tmp/splade_cli_inputXXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

cat > v.jsonl <<'J'
{"id": "d1", "vector": {"cat": 1.5, "dog": 0.5}}
{"id": "d2", "vector": {"dog": 2.0, "bone": 1.0}}
J
printf '{"id": "q1", "vector": {"dog": 1.0, "cat": 0.1}}\n' > q.jsonl
"$BIN" build --vectors v.jsonl -o ix --quiet || fail "first build"
"$BIN" query -i ix --vector-queries q.jsonl > before.trec || fail "query before"
[ -s before.trec ] || fail "empty run before"

# A build of FILE must fail with a message matching PATTERN, keep the index answering as before
# and leave nothing but index.spx in its folder.
refused() { # FILE PATTERN [build options...]
    f=$1 pat=$2
    shift 2
    "$BIN" build --vectors "$f" -o ix --quiet "$@" > out.txt 2>&1 && fail "$f accepted: $(cat out.txt)"
    grep -qE -- "$pat" out.txt || fail "$f: message does not match '$pat': $(cat out.txt)"
    "$BIN" query -i ix --vector-queries q.jsonl > after.trec || fail "query after $f"
    cmp -s before.trec after.trec || fail "the previous index answers differently after $f"
    left=$(ls -A ix | grep -v '^index.spx$')
    [ -z "$left" ] || fail "left in the index folder after $f: $left"
}

# item 2: NUL byte, over-long line (the 64 MiB limit), a read error
{ head -1 v.jsonl; printf '{"id": "d3",\0 "vector": {}}\n'; } > nul.jsonl
refused nul.jsonl "nul.jsonl:2: NUL byte"
{ head -1 v.jsonl; printf '{"id": "d3", "contents": "'; head -c 67108870 /dev/zero | tr '\0' a; echo '"}'; } > long.jsonl
refused long.jsonl "long.jsonl:2: line longer than the limit of 64 MiB"
rm -f long.jsonl
mkdir adir
refused adir "adir:1: read error: Is a directory"
# a file of zeros without a newline fails naming line 1 (checked per chunk: test_common, fuzz)
head -c 3000000 /dev/zero > zeros.jsonl
refused zeros.jsonl "zeros.jsonl:1: NUL byte"

# item 12: \u0000 named by its field; a byte-order mark skipped
{ head -1 v.jsonl; echo '{"id": "d3", "vector": {"a": 1}, "contents": "x\u0000y"}'; } > nulesc.jsonl
refused nulesc.jsonl 'nulesc.jsonl:2: field "contents" holds \\u0000'
printf '\357\273\277' > bom.jsonl && cat v.jsonl >> bom.jsonl
"$BIN" build --vectors bom.jsonl -o bom.idx --quiet || fail "a byte-order mark refused"
"$BIN" query -i bom.idx --vector-queries q.jsonl | cmp -s - before.trec || fail "BOM file indexed differently"

# item 5: nothing useful read; gzip read directly; other compression named
: > empty.jsonl
refused empty.jsonl "empty.jsonl holds no documents"
printf '{"id": "d1"}\n[1]\n' > allbad.jsonl
refused allbad.jsonl "every line of allbad.jsonl was invalid \(2 skipped\)" --skip-invalid
gzip -c v.jsonl > v.jsonl.gz
"$BIN" build --vectors v.jsonl.gz -o gz.idx --quiet || fail "gzip input refused"
"$BIN" query -i gz.idx --vector-queries q.jsonl | cmp -s - before.trec || fail "gzip input indexed differently"
cat v.jsonl | "$BIN" build --vectors - -o stdin.idx --quiet || fail "plain standard input"
gzip -c v.jsonl | "$BIN" build --vectors - -o stdin.idx --quiet || fail "gzip standard input"
gzip -c nul.jsonl > nul.jsonl.gz
refused nul.jsonl.gz "nul.jsonl.gz:2: NUL byte"
head -c 40 v.jsonl.gz > cut.jsonl.gz
refused cut.jsonl.gz "cut.jsonl.gz:1: (truncated gzip data|corrupt gzip data)"
printf '\3757zXZ\0\0\4\346\326\264F' > v.jsonl.xz
refused v.jsonl.xz "compressed input \(xz\) is not supported"
printf '\050\265\057\375\0\0' > v.jsonl.zst
refused v.jsonl.zst "compressed input \(zstd\) is not supported"

# item 4: ids; the query side through --vector-queries
for bad in '""' '"a b"' '"a\tb"' '"a\nb"' '"x\u0001"' "\"$(head -c 1025 /dev/zero | tr '\0' i)\""; do
    printf '{"id": "d0", "vector": {"a": 1}}\n{"id": %s, "vector": {"a": 1}}\n' "$bad" > badid.jsonl
    refused badid.jsonl 'badid.jsonl:2: field "id" (is empty|contains whitespace or a control character|is longer than 1024 bytes)'
    printf '{"id": %s, "vector": {"a": 1}}\n' "$bad" > badq.jsonl
    "$BIN" query -i ix --vector-queries badq.jsonl > out.txt 2>&1 && fail "query id $bad accepted"
    grep -q 'badq.jsonl:1: field "id"' out.txt || fail "query id $bad: $(cat out.txt)"
done
printf '{"_id": "caf\303\251-1/x:y", "vector": {"a": 1}}\n{"id": -7, "vector": {"a": 1}}\n' > goodid.jsonl
"$BIN" build --vectors goodid.jsonl -o good.idx --quiet || fail "valid ids refused"

if [ ! -f "$MODEL/model.safetensors" ]; then
    echo "ok (model paths skipped: no model at $MODEL, run make models)"
    exit 0
fi
# the corpus side with a model: build, encode --input, query --queries
cat > c.jsonl <<'J'
{"_id": "d1", "title": "cats", "text": "cats and dogs"}
{"_id": "d2", "text": "a dog with a bone"}
J
printf '{"_id": "q1", "text": "dog"}\n' > cq.jsonl
"$BIN" build c.jsonl -o cx --model "$MODEL" --device cpu --quiet || fail "corpus build"
"$BIN" query -i cx --queries cq.jsonl --output crun.trec 2> out.txt || fail "query --queries: $(cat out.txt)"
gzip -c c.jsonl > c.jsonl.gz
"$BIN" build c.jsonl.gz -o cgz --model "$MODEL" --device cpu --quiet || fail "gzip corpus"
"$BIN" query -i cgz --queries cq.jsonl --output cgz.trec 2>/dev/null && cmp -s crun.trec cgz.trec \
    || fail "gzip corpus indexed differently"
printf '{"id": "d1"}\n{"title": "x"}\n' | gzip -c > allbad.jsonl.gz
"$BIN" build allbad.jsonl.gz -o cx --model "$MODEL" --device cpu --quiet --skip-invalid > out.txt 2>&1 \
    && fail "a gzip corpus with every line invalid accepted"
grep -q "every line of allbad.jsonl.gz was invalid (2 skipped)" out.txt || fail "message: $(cat out.txt)"
: > empty.jsonl
"$BIN" build empty.jsonl -o cx --model "$MODEL" --device cpu --quiet > out.txt 2>&1 && fail "empty corpus accepted"
grep -q "empty.jsonl holds no documents" out.txt || fail "message: $(cat out.txt)"
"$BIN" query -i cx --queries cq.jsonl --output crun2.trec 2>/dev/null && cmp -s crun.trec crun2.trec \
    || fail "the corpus index answers differently after the refused builds"
printf '{"_id": "d1", "text": "x"}\n{"_id": "d 2", "text": "y"}\n' > cbad.jsonl
"$BIN" build cbad.jsonl -o cx --model "$MODEL" --device cpu --quiet > out.txt 2>&1 && fail "corpus id accepted"
grep -q 'cbad.jsonl:2: field "_id" contains whitespace' out.txt || fail "build corpus id: $(cat out.txt)"
"$BIN" encode --model "$MODEL" --device cpu --input cbad.jsonl > out.jsonl 2> out.txt && fail "encode id accepted"
grep -q 'cbad.jsonl:2: field "_id" contains whitespace' out.txt || fail "encode id: $(cat out.txt)"
printf '{"_id": "", "text": "dog"}\n' > cqbad.jsonl
"$BIN" query -i cx --queries cqbad.jsonl --output bad.trec > out.txt 2>&1 && fail "query id accepted"
grep -q 'cqbad.jsonl:1: field "_id" is empty' out.txt || fail "query --queries id: $(cat out.txt)"
echo "ok: bad input refused naming FILE:LINE, previous index intact, gzip read, ids checked"
