#!/bin/sh
# Quality of the CPU's reduced precisions against fp32 on SciFact (issue #13 item 3): every document
# and query encoded with each --precision, an index built from each precision's document vectors,
# the test queries run on it (its own query vectors) and nDCG@10 / recall@100 by `splade-index eval`;
# then bench/cpu_quality.py's top-50 / top-10 agreement of each precision's vectors with fp32's.
#
#   sh bench/cpu_quality.sh [MODEL_DIR [PRECISION... ]]     (default: cache/splade-tiny, bf16 int8)
#
# Env: BUILD (build-nc), SCIFACT (../shared/data/scifact), THREADS (2), OUTDIR (tmp/quality/<model>),
# DOCS (all; a count takes the first N documents and skips the retrieval metrics), REUSE_FP32=1 (keep
# OUTDIR's fp32 files from an earlier run of the same commit's fp32 path).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODEL=${1:-cache/splade-tiny}
[ $# -gt 0 ] && shift
PRECS=${*:-bf16 int8}
BIN=$ROOT/${BUILD:-build-nc}/splade-index
SF=${SCIFACT:-$ROOT/../shared/data/scifact}
OUT=${OUTDIR:-$ROOT/tmp/quality/$(basename "$MODEL")}
mkdir -p "$OUT"
CORPUS=$SF/corpus.jsonl
if [ -n "${DOCS:-}" ]; then head -n "$DOCS" "$SF/corpus.jsonl" > "$OUT/corpus.jsonl"; CORPUS=$OUT/corpus.jsonl; fi
echo "# cpu_quality: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD), model $MODEL, load $(cut -d' ' -f1-3 /proc/loadavg)"
for p in fp32 $PRECS; do
    if [ "$p" = fp32 ] && [ -n "${REUSE_FP32:-}" ] && [ -s "$OUT/docs_fp32.jsonl" ]; then
        [ -n "${DOCS:-}" ] || echo "fp32 (reused): $("$BIN" eval --run "$OUT/run_fp32.trec" --qrels "$SF/qrels/test.tsv" --metrics ndcg@10,recall@100 | tr '\n' ' ')"
        continue
    fi
    "$BIN" encode --model "$MODEL" --device cpu --threads "${THREADS:-2}" --precision "$p" --quiet \
        --input "$CORPUS" > "$OUT/docs_$p.jsonl"
    [ -n "${DOCS:-}" ] && continue
    "$BIN" encode --model "$MODEL" --device cpu --threads "${THREADS:-2}" --precision "$p" --quiet \
        --input "$SF/queries.jsonl" > "$OUT/queries_$p.jsonl"
    "$BIN" build --vectors "$OUT/docs_$p.jsonl" -o "$OUT/idx_$p" --quiet
    "$BIN" query -i "$OUT/idx_$p" --vector-queries "$OUT/queries_$p.jsonl" -k 100 -o "$OUT/run_$p.trec"
    echo "$p: $("$BIN" eval --run "$OUT/run_$p.trec" --qrels "$SF/qrels/test.tsv" --metrics ndcg@10,recall@100 | tr '\n' ' ')"
done
for p in $PRECS; do
    for k in 50 10; do
        echo "$p documents: $(python3 "$ROOT/bench/cpu_quality.py" "$OUT/docs_fp32.jsonl" "$OUT/docs_$p.jsonl" -k $k)"
    done
    [ -n "${DOCS:-}" ] || echo "$p queries: $(python3 "$ROOT/bench/cpu_quality.py" "$OUT/queries_fp32.jsonl" "$OUT/queries_$p.jsonl" -k 50)"
done
