#!/bin/sh
# Issue #12's search goal on a quiet machine: BMP over 10 unmerged segments vs one file of the same
# 1 M synthetic documents (bench_index's SPLADE-like collection, fixed doc_scale so both quantize
# alike), the same 1,000 queries read back by every run, interleaved A B A B, one thread each.
# The development VM is shared (load 5-20), which inflates the per-segment cache misses; this
# script is what bench/gpu.sh's host (16 idle cores) runs: `SEG_ROUNDS=3 sh bench/segments_bmp.sh`.
# Peers: "one" = one file built in memory (reordered as a whole), "mrg" = the 10 segments merged
# (each segment's order kept), "seg" = the 10 segments unmerged.
# Output: the bench's per-method lines (CPU median/p99, postings per query, hits digest) per run.
set -eu
BUILD=${BUILD:-build-gpu}
B=$BUILD/bench/bench_index
D=${SEG_DIR:-/tmp/splade-seg}
DOCS=${SEG_DOCS:-1000000}
OUTF=${OUT:-/tmp}/segments_bmp.txt
rm -rf "$D" && mkdir -p "$D"
[ -x "$B" ] || make BUILD="$BUILD" -j16 "$B" >/dev/null
echo "segments_bmp: $DOCS docs, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)" | tee "$OUTF"
"$B" --docs "$DOCS" --queries 1000 --dir "$D/one" --doc-scale 0.0118 --methods 3 --write-queries "$D/q.jsonl" \
    >"$D/build_one.txt" 2>&1
"$B" --docs "$DOCS" --queries 1000 --dir "$D/seg" --doc-scale 0.0118 --methods 3 --memory-mb 256 \
    >"$D/build_seg.txt" 2>&1
# the same 10 segments merged into one (splade_index_merge keeps each input's document order)
"$B" --docs "$DOCS" --queries 1000 --dir "$D/mrg" --doc-scale 0.0118 --methods 3 --memory-mb 256 --merge 1 \
    >"$D/build_mrg.txt" 2>&1
grep -iE 'segment|build' "$D/build_seg.txt" | head -5 | tee -a "$OUTF"
for r in $(seq 1 "${SEG_ROUNDS:-3}"); do
    for ix in one seg mrg; do
        echo "== round $r, $ix" | tee -a "$OUTF"
        taskset -c "$(( $(nproc) - 1 ))" "$B" --vector-queries "$D/q.jsonl" --dir "$D/$ix" --k 10 --threads 1 --methods 3 2>&1 | \
            grep -E "BMP|digest|index |\| method" | tee -a "$OUTF"
    done
done
