#!/bin/sh
# A model folder that does not describe what the forward computes is refused, never silently used
# (splade-tiny; skipped, exit 77, when it is not fetched):
#  - config.json's head count is part of the fingerprint: a copy with other heads cannot query
#    the original's index;
#  - num_hidden_layers 1 on the 2-layer checkpoint: the build fails naming the unused tensor;
#  - a NaN weight: the build fails naming the model and tensor (it used to index empty vectors);
#  - a FIFO model.safetensors or a vocab.txt that is /dev/urandom: an error, not a hang.
# After each failure the previous index answers identically and nothing is left in its folder.
set -u
ROOT=$(pwd)
BIN=$ROOT/${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
MODEL=${SPLADE_MODEL:-$ROOT/cache/splade-tiny}
[ -f "$MODEL/model.safetensors" ] || { echo "SKIP: no model at $MODEL (run make models)"; exit 77; }
T=$(mktemp -d /tmp/splade_cli_mchkXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
DATA=$ROOT/data/example

head -12 "$DATA/corpus.jsonl" > "$T/corpus.jsonl"
"$BIN" build "$T/corpus.jsonl" -o "$T/idx" --model "$MODEL" --device cpu --quiet || fail "first build"
"$BIN" query -i "$T/idx" "why do earthquakes happen" -k 5 > "$T/before.out" || fail "query before"
unchanged() { # $1: what failed
    "$BIN" query -i "$T/idx" "why do earthquakes happen" -k 5 | cmp -s - "$T/before.out" ||
        fail "the index answers differently after $1"
    left=$(ls -A "$T/idx" | grep -v '^index.spx$')
    [ -z "$left" ] || fail "left in the index folder after $1: $left"
}
copy() { mkdir "$T/$1" && cp "$MODEL/config.json" "$MODEL/vocab.txt" "$MODEL/tokenizer_config.json" \
    "$MODEL/model.safetensors" "$T/$1/"; }

# 1. Two heads -> four: other vectors, another fingerprint, refused against the original's index.
copy heads
sed 's/"num_attention_heads": 2,/"num_attention_heads": 4,/' "$MODEL/config.json" > "$T/heads/config.json"
grep -q '"num_attention_heads": 4' "$T/heads/config.json" || fail "could not edit config.json"
"$BIN" encode --model "$MODEL" --device cpu --quiet "volcanic eruptions" > "$T/v2.jsonl" || fail "encode"
"$BIN" encode --model "$T/heads" --device cpu --quiet "volcanic eruptions" > "$T/v4.jsonl" || fail "encode heads"
cmp -s "$T/v2.jsonl" "$T/v4.jsonl" && fail "the head count did not change the vectors (test is void)"
"$BIN" query -i "$T/idx" --model "$T/heads" "volcano" > /dev/null 2> "$T/err" && fail "other heads accepted"
grep -q "mismatch: the index was built with model .* but $T/heads has fingerprint" "$T/err" ||
    fail "message: $(cat "$T/err")"
"$BIN" query -i "$T/idx" --model "$MODEL" "volcano" > /dev/null || fail "the original model is refused"

# 2. num_hidden_layers 1 on a 2-layer checkpoint: the second layer must not be dropped silently.
copy layers
sed 's/"num_hidden_layers": 2,/"num_hidden_layers": 1,/' "$MODEL/config.json" > "$T/layers/config.json"
"$BIN" build "$T/corpus.jsonl" -o "$T/idx" --model "$T/layers" --device cpu --quiet 2> "$T/err" &&
    fail "a checkpoint with unused layers was accepted"
grep -q "$T/layers/model.safetensors: 16 tensors the model does not use, the first 'bert.encoder.layer.1\." "$T/err" ||
    fail "message: $(cat "$T/err")"
unchanged "the unused-tensor refusal"

# 3. One weight NaN (patched in place: 8-byte header length, JSON header, then F32 data).
copy nan
hlen=$(od -An -tu8 -N8 "$T/nan/model.safetensors" | tr -d ' ')
printf '\000\000\300\177' | dd of="$T/nan/model.safetensors" bs=1 seek=$((8 + hlen + 4096)) conv=notrunc 2> /dev/null
cmp -s "$MODEL/model.safetensors" "$T/nan/model.safetensors" && fail "could not patch the weights"
"$BIN" build "$T/corpus.jsonl" -o "$T/idx" --model "$T/nan" --device cpu --quiet 2> "$T/err" &&
    fail "a model with a NaN weight built an index"
grep -q "$T/nan/model.safetensors: tensor '.*' holds a non-finite value (NaN)" "$T/err" || fail "message: $(cat "$T/err")"
unchanged "the NaN refusal"

# 4. Files that are not regular files: a clear error at once (timeout: these used to hang).
copy fifo
rm "$T/fifo/model.safetensors" && mkfifo "$T/fifo/model.safetensors"
timeout 30 "$BIN" encode --model "$T/fifo" --device cpu --quiet "x" > /dev/null 2> "$T/err"
rc=$?
[ $rc -ne 124 ] || fail "a FIFO model.safetensors hangs"
[ $rc -ne 0 ] || fail "a FIFO model.safetensors was accepted"
grep -q "$T/fifo/model.safetensors: not a regular file" "$T/err" || fail "message: $(cat "$T/err")"
copy urandom
rm "$T/urandom/vocab.txt" && ln -s /dev/urandom "$T/urandom/vocab.txt"
timeout 30 "$BIN" build "$T/corpus.jsonl" -o "$T/idx" --model "$T/urandom" --device cpu --quiet 2> "$T/err"
rc=$?
[ $rc -ne 124 ] || fail "vocab.txt -> /dev/urandom hangs"
[ $rc -ne 0 ] || fail "vocab.txt -> /dev/urandom was accepted"
grep -q "$T/urandom/vocab.txt: not a regular file" "$T/err" || fail "message: $(cat "$T/err")"
unchanged "the /dev/urandom refusal"
echo "ok: config heads in the fingerprint, unused tensors, NaN weights and non-regular files refused"
