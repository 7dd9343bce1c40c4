#!/usr/bin/env bash
# Recall/latency curve of the approximate mode (splade_search_opts: query_cut, bound_factor) on one
# index: the exact default (auto) and every setting once per round, ROUNDS rounds, one thread, k = 10,
# thread CPU per query; recall@10 against taat's exact run (ties at the k-th score count as found).
#   SQ=<bench/query/sq_latency binary> bash bench/query/approx_curve.sh INDEX QVECTORS OUT [ROUNDS=2] [SETTINGS]
# SETTINGS: "qc:bf ..." (qc 0: every term; bf 1: no range skipping).
set -euo pipefail
: "${SQ:?}"
IX=$1 Q=$2 OUT=$3 ROUNDS=${4:-2}
SETTINGS=${5:-"0:0.9 0:0.8 0:0.75 0:0.7 50:1 40:1 30:1 50:0.9 40:0.9 30:0.9 50:0.8 40:0.8 35:0.8 30:0.8 25:0.8 20:0.8 40:0.7 30:0.7"}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
"$SQ" "$IX" "$Q" "$OUT/taat.trec" "$OUT/taat.lat" taat 10 1 > /dev/null
cpu() { cut -d' ' -f2 "$1" | sort -g | awk '{v[NR]=$1; s+=$1} END {printf "%.1f %.1f", v[int(NR/2)+1], s/NR}'; }
for r in $(seq "$ROUNDS"); do
  "$SQ" "$IX" "$Q" "$OUT/auto.trec" "$OUT/auto.$r.lat" auto 10 1 > /dev/null
  echo "round $r exact auto: cpu median/mean $(cpu "$OUT/auto.$r.lat")"
  for s in $SETTINGS; do
    qc=${s%:*} bf=${s#*:}
    QUERY_CUT=$qc BOUND_FACTOR=$bf "$SQ" "$IX" "$Q" "$OUT/qc$qc-bf$bf.trec" "$OUT/qc$qc-bf$bf.$r.lat" auto 10 1 > /dev/null
    echo "round $r qc $qc bf $bf: cpu median/mean $(cpu "$OUT/qc$qc-bf$bf.$r.lat") recall $(python3 "$HERE/recall.py" "$OUT/taat.trec" "$OUT/qc$qc-bf$bf.trec" | sed 's/.*recall@10 //')"
  done
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
