#!/bin/sh
# An encoder that fails mid-run (issue #17 item 3: "nothing half-written is installed"), on any
# machine: SPLADE_TEST_ENCODER_FAIL=SLOT:N[:CODE] (docs/CONTRIBUTING.md, Settings) makes the CPU
# encoder (slot 0) fail its N-th batch as a GPU would. With --batch 4 the corpus is encoded in
# chunks of 32 texts and --memory 1K writes segments as it goes, so batch 10 fails after the first
# chunk's segment is on disk. `build` into a new folder leaves no folder; `build` over an index and
# `add` to it leave every file byte for byte as it was; each exits 1 naming the failure. Without the
# setting the same commands work (the failure was the injected one). Skipped (77) without splade-tiny.
set -u
ROOT=$(pwd)
BIN=$ROOT/${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
MODEL=${SPLADE_MODEL:-$ROOT/cache/splade-tiny}
[ -f "$MODEL/model.safetensors" ] || { echo "SKIP: no model at $MODEL (run make models)"; exit 77; }
CORPUS=$ROOT/data/example/corpus.jsonl
T=$(mktemp -d /tmp/splade_cli_faultXXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
unset SPLADE_TEST_ENCODER_FAIL
enc="--model $MODEL --device cpu --batch 4 --memory 1K"
sed 's/"_id": "/"_id": "new-/' "$CORPUS" > more.jsonl
grep -q '"_id": "new-' more.jsonl || fail "could not make the add corpus"
# every file of DIR (hidden ones too) with its hash: the index's state
state() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs sha256sum); }

# the reference: spilled in several segments, so a failure in the second chunk follows a write
"$BIN" build "$CORPUS" -o ix $enc --quiet || fail "build without the setting"
[ "$(ls ix | grep -c '^seg-')" -ge 2 ] || fail "the build wrote one segment, the test needs a spill before batch 10: $(ls -A ix)"

# build into a new folder: exit 1, a clear message, no folder
SPLADE_TEST_ENCODER_FAIL=0:10 "$BIN" build "$CORPUS" -o new $enc > out.txt 2>&1
rc=$?
[ $rc -eq 1 ] || fail "build with a failing encoder: exit $rc, not 1: $(cat out.txt)"
grep -q "^splade-index build: CUDA error: encoder 0 of 1 (the CPU): failure injected in its batch 10 (SPLADE_TEST_ENCODER_FAIL)" out.txt ||
    fail "build's message: $(cat out.txt)"
[ ! -e new ] || fail "a failed build left a folder: $(ls -A new)"

# build over the index, then add to it: nothing changes, not even a temporary or lock file
state ix > before.txt
SPLADE_TEST_ENCODER_FAIL=0:10 "$BIN" build "$CORPUS" -o ix $enc > out.txt 2>&1
rc=$?
[ $rc -eq 1 ] || fail "build over an index with a failing encoder: exit $rc: $(cat out.txt)"
state ix > after.txt
cmp -s before.txt after.txt || fail "a failed build changed the index: $(diff before.txt after.txt)"
SPLADE_TEST_ENCODER_FAIL=0:10:-9 "$BIN" add more.jsonl -i ix $enc > out.txt 2>&1
rc=$?
[ $rc -eq 1 ] || fail "add with a failing encoder: exit $rc: $(cat out.txt)"
grep -q "^splade-index add: out of GPU memory: encoder 0 of 1 (the CPU): failure injected in its batch 10" out.txt ||
    fail "add's message: $(cat out.txt)"
state ix > after.txt
cmp -s before.txt after.txt || fail "a failed add changed the index: $(diff before.txt after.txt)"

# a malformed setting is off; without the setting the add works and changes the index
SPLADE_TEST_ENCODER_FAIL=0:0 "$BIN" build "$CORPUS" -o off $enc --quiet || fail "SPLADE_TEST_ENCODER_FAIL=0:0 was not off"
SPLADE_TEST_ENCODER_FAIL=1:10 "$BIN" build "$CORPUS" -o off2 $enc --quiet || fail "slot 1 of a single encoder failed"
"$BIN" add more.jsonl -i ix $enc --quiet || fail "add without the setting"
state ix > after.txt
cmp -s before.txt after.txt && fail "the add did not change the index"
n=$("$BIN" info -i ix | awk '/^live documents:/ { print $3 }')
[ "$n" = 80 ] || fail "info says $n live documents after the add, not 80"
echo "ok: a failing encoder stops build and add with a clear error and installs nothing"
