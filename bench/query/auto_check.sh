#!/usr/bin/env bash
# The default (auto) against each exact method it could pick, on one index, interleaved (every
# method once per round, ROUNDS rounds), one thread, k = 10, one warm-up pass then one timed pass:
#   SQ=<bench/query/sq_latency binary> bash bench/query/auto_check.sh INDEX QVECTORS OUT [ROUNDS=3] [METHODS]
# With SQ_BASE=<another build's sq_latency>, each round first runs that build's auto as "auto-base"
# (BASE_METHODS="auto wtaat": each of them as "<method>-base").
# Prints per run: thread-CPU µs per query median / p99 / mean, wall median, postings per query; then
# whether each method's run equals taat's (ranks and scores).
set -euo pipefail
: "${SQ:?}"
IX=$1 Q=$2 OUT=$3 ROUNDS=${4:-3} METHODS=${5:-auto wtaat taat bmp}
BASES=""; [ -n "${SQ_BASE:-}" ] && for m in ${BASE_METHODS:-auto}; do BASES="$BASES $m-base"; done
mkdir -p "$OUT"
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  for a in $BASES $METHODS; do
    bin=$SQ algo=$a
    case $a in *-base) bin=$SQ_BASE algo=${a%-base} ;; esac
    line=$("$bin" "$IX" "$Q" "$OUT/$a.trec" "$OUT/$a.$r.lat" $algo 10 1)
    cpu=$(cut -d' ' -f2 "$OUT/$a.$r.lat" | sort -g | awk '{v[NR]=$1; s+=$1} END {
      printf "cpu median %.1f p99 %.1f (x%.2f) mean %.1f", v[int(NR/2)+1], v[int(NR*0.99)+1], v[int(NR*0.99)+1] / v[int(NR/2)+1], s/NR}')
    echo "round $r $a: $cpu | wall median $(echo "$line" | sed 's/.*median \([0-9.]*\) us.*/\1/') | postings $(echo "$line" | sed 's/.*postings\/query \([0-9]*\).*/\1/')"
  done
done
for a in $BASES $METHODS; do
  cmp -s <(cut -d' ' -f1-5 "$OUT/taat.trec") <(cut -d' ' -f1-5 "$OUT/$a.trec") && echo "$a: identical to taat" ||
    echo "$a: DIFFERS from taat"
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
