#!/usr/bin/env bash
# base (main's libsplade) against the forward-completion prototype, interleaved, ROUNDS rounds:
#   BASE=<sq_latency of main> NEW=<sq_latency with forward-completion.patch> bash interleave.sh IX Q OUT [ROUNDS]
set -euo pipefail
IX=$1 Q=$2 OUT=$3 ROUNDS=${4:-2}
mkdir -p "$OUT"
stat() { cut -d' ' -f2 "$1" | sort -g | awk '{v[NR]=$1; s+=$1} END {printf "cpu median %.1f p99 %.1f (x%.2f) mean %.1f", v[int(NR/2)+1], v[int(NR*0.99)+1], v[int(NR*0.99)+1]/v[int(NR/2)+1], s/NR}'; }
for r in $(seq "$ROUNDS"); do
  for algo in wtaat auto; do
    for v in base fwd0 fwd16; do
      case $v in
        base) "$BASE" "$IX" "$Q" "$OUT/$algo-$v.trec" "$OUT/$algo-$v.$r.lat" $algo 10 1 > "$OUT/$algo-$v.$r.out" ;;
        fwd*) WT_RATIO=${v#fwd} FORWARD=1 "$NEW" "$IX" "$Q" "$OUT/$algo-$v.trec" "$OUT/$algo-$v.$r.lat" $algo 10 1 > "$OUT/$algo-$v.$r.out" ;;
      esac
      echo "round $r $algo $v: $(stat "$OUT/$algo-$v.$r.lat") | $(grep -o 'blocks/query [0-9]*' "$OUT/$algo-$v.$r.out") $(grep -o 'rescored/query [0-9.]*' "$OUT/$algo-$v.$r.out" || true) | load $(cut -d' ' -f1-3 /proc/loadavg)"
    done
  done
done
for algo in wtaat auto; do for v in fwd0 fwd16; do
  cmp -s <(cut -d' ' -f1-5 "$OUT/$algo-base.trec") <(cut -d' ' -f1-5 "$OUT/$algo-$v.trec") && echo "$algo $v: identical to $algo base" || echo "$algo $v: DIFFERS"
done; done
