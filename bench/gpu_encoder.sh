#!/bin/sh
# GPU encoder benchmark (called by bench/gpu.sh on the GPU machine; runs alone too).
#   sh bench/gpu_encoder.sh            # builds $BUILD/bench/bench_encoder_gpu unless BENCH_BIN is set
# Environment: BUILD (default build), BENCH_BIN (a prebuilt bench_encoder_gpu), SCIFACT (corpus.jsonl),
# TOKENIZER (tokenizer.json of bert-base-uncased), MAX_LEN (256), OUT (also writes encoder-gpu.txt there).
# The real-document rows need python3 with `tokenizers` (the GPU machine has it); without it, or
# without the corpus, only the fixed-shape rows run.
set -e
BUILD=${BUILD:-build}
BENCH_BIN=${BENCH_BIN:-$BUILD/bench/bench_encoder_gpu}
[ -x "$BENCH_BIN" ] || make BUILD="$BUILD" "$BENCH_BIN"
for c in "$SCIFACT" ../shared/data/scifact/corpus.jsonl .gpu/scifact/corpus.jsonl; do
    [ -n "$c" ] && [ -f "$c" ] && { SCIFACT=$c; break; }
done
for c in "$TOKENIZER" ../shared/data/bert-base-uncased/tokenizer.json .gpu/bert-base-uncased/tokenizer.json; do
    [ -n "$c" ] && [ -f "$c" ] && { TOKENIZER=$c; break; }
done
DOCS_ARG=
IDS=${TMPDIR:-/tmp}/scifact_ids.bin
if [ -f "$SCIFACT" ] && [ -f "$TOKENIZER" ] && python3 -c 'import tokenizers' 2>/dev/null; then
    python3 - "$SCIFACT" "$TOKENIZER" "$IDS" "${MAX_LEN:-256}" <<'PY'
import json, struct, sys
from tokenizers import Tokenizer
corpus, tok_path, out, max_len = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tok = Tokenizer.from_file(tok_path)
tok.no_padding()
tok.enable_truncation(max_length=max_len)
texts = []
for line in open(corpus, encoding="utf-8"):
    if line.strip():
        d = json.loads(line)
        title, text = d.get("title") or "", d.get("text") or ""
        texts.append(f"{title} {text}" if title else text)
enc = tok.encode_batch(texts)
with open(out, "wb") as f:
    f.write(struct.pack("<i", len(enc)))
    f.write(struct.pack(f"<{len(enc)}i", *[len(e.ids) for e in enc]))
    for e in enc:
        f.write(struct.pack(f"<{len(e.ids)}i", *e.ids))
n = sum(len(e.ids) for e in enc)
print(f"scifact: {len(enc)} docs, {n} tokens (mean {n/len(enc):.1f}, max_len {max_len})")
PY
    DOCS_ARG="--docs $IDS"
else
    echo "note: no SciFact corpus / tokenizer.json / python tokenizers: fixed shapes only"
fi
if [ -n "$OUT" ]; then
    "$BENCH_BIN" $DOCS_ARG | tee "$OUT/encoder-gpu.txt"
else
    "$BENCH_BIN" $DOCS_ARG
fi
