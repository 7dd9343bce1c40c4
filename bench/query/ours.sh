#!/usr/bin/env bash
# Our methods on one index, interleaved (every method once per round, ROUNDS rounds), one thread,
# k = 10, then the approximate settings and the batch throughput on 1 and 2 threads:
#   SQ=<bench/query/sq_latency binary> BIN=<splade-index> bash bench/query/ours.sh INDEX QVECTORS OUT [ROUNDS=2]
# Prints the lines of sq_latency (wall and thread-CPU µs per query) and recall@10 against taat's run.
set -euo pipefail
: "${SQ:?}" "${BIN:?}"
IX=$1 Q=$2 OUT=$3 ROUNDS=${4:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  for a in auto wtaat taat bmp wmaxscore; do "$SQ" "$IX" "$Q" "$OUT/$a.trec" "$OUT/$a.$r.lat" $a 10 1; done
done
"$SQ" "$IX" "$Q" "$OUT/bmm.trec" "$OUT/bmm.lat" bmm 10 0
for a in auto wtaat bmp wmaxscore bmm; do # the runs but their tag column
  cmp -s <(cut -d' ' -f1-5 "$OUT/taat.trec") <(cut -d' ' -f1-5 "$OUT/$a.trec") && echo "$a: identical to taat" ||
    echo "$a: DIFFERS from taat"
done
for qc in 40 30 20 10; do
  for bf in 1 0.8; do
    QUERY_CUT=$qc BOUND_FACTOR=$bf "$SQ" "$IX" "$Q" "$OUT/ap.qc$qc.bf$bf.trec" "$OUT/ap.qc$qc.bf$bf.lat" wtaat 10 1 |
      sed "s/^/query_cut=$qc bound_factor=$bf /"
  done
done
python3 "$HERE/recall.py" "$OUT/taat.trec" "$OUT"/ap.*.trec
for i in $(seq 10); do sed "s/\"id\": \"/\"id\": \"$i-/" "$Q"; done > "$OUT/q10.jsonl" # 10 copies, new ids
N=$(wc -l < "$OUT/q10.jsonl")
for t in 1 2 1 2; do # batch throughput: the CLI's --vector-queries, k = 10, parse + search + write
  /usr/bin/time -f "threads $t: $N queries, %e s wall, %U s user, %S s sys" "$BIN" query -i "$IX" \
    --vector-queries "$OUT/q10.jsonl" -o /dev/null -k 10 --threads $t 2>&1 | tail -1
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
