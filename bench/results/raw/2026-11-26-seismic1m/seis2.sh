#!/bin/sh
# realistic 1 M: a Seismic build that reaches recall 0.95 / 0.99 there, against ours (approximate settings
# and exact auto), alternating on one idle core; recall@10 of every run against the float brute force
# (the harness's eval) and ours' exact TAAT (bench/query/recall.py). Run under bench/device_bg.sh.
#   SEIS_BUILD="n_postings=7000 centroid_fraction=0.05 max_fraction=1.0" SEIS="qc:hf ..." OURS="qc:R:B ..."
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$(date +%s); el() { echo "+$(( $(date +%s) - T0 ))s"; }
export GIT_COMMIT=${GIT_COMMIT:-unknown}
W=tmp/r1m SQ=build-gpu/bench/sq_latency NC=$(getconf _NPROCESSORS_ONLN)
Q=$((NC - 1))
export PYTHONPATH=/tmp/site PEERS_QUERY=.gpu/peer_query/peers_query.py RAYON_NUM_THREADS=1 OMP_NUM_THREADS=1
H="python3 bench/query/peers_mt.py"
R=$OUT/results.jsonl; grep '"kind": "build"' $W/seis.results.jsonl > $R 2>/dev/null
cpu() { cut -d' ' -f2 "$1" | sort -g | awk '{v[NR]=$1; s+=$1} END {printf "median %.1f mean %.1f p99 %.1f", v[int(NR/2)+1], s/NR, v[int(NR*0.99)+1]}'; }
mkdir -p $W/runs
rec() { python3 bench/query/recall.py $W/runs/taat.trec "$1" | sed 's/.*recall@10 //'; }
ours() { # NAME [QC R B]: one pass through the harness (its record joins $R)
  n=$1; shift
  if [ $# = 3 ]; then export QUERY_CUT=$1 RESCORE=$2 BUDGET=$3; else unset QUERY_CUT RESCORE BUDGET; fi
  taskset -c $Q $H query ours $W/idx/ours $W/q.vec.jsonl $W/runs/$n.trec $W/runs/$n.$r.lat --label ours --point $n \
    --param sq_latency=$SQ --param algo=auto 2>/dev/null | tail -1 >> $R
  unset QUERY_CUT RESCORE BUDGET
  echo "round $r ours $n: $(cpu $W/runs/$n.$r.lat) recall(taat) $(rec $W/runs/$n.trec) $(el)"
}
seis() { # QC HF
  n=qc$1-hf$2
  taskset -c $Q $H query seismic $W/idx/seis $W/q.vec.jsonl $W/runs/s.$n.trec $W/runs/s.$n.$r.lat --label seis --point $n \
    --param query_cut=$1 --param heap_factor=$2 2>/dev/null | tail -1 >> $R
  echo "round $r seismic $n: $(cpu $W/runs/s.$n.$r.lat) recall(taat) $(rec $W/runs/s.$n.trec) $(el)"
}
set -- ${SEIS:-20:0.9 20:0.7 20:0.6 40:0.7 40:0.6 40:0.5}
NS=$#
for r in $(seq ${ROUNDS:-2}); do
  [ -n "${NO_EXACT:-}" ] || ours exact
  j=0
  for s in ${OURS:-24:200:400000 30:300:400000 30:300:500000}; do
    IFS=: read -r qc rs b <<EOS
$s
EOS
    ours qc$qc-r$rs-b$b $qc $rs $b
    # two Seismic settings after each of ours (every setting once per round when NS <= 2 x ours')
    for x in 1 2; do j=$((j + 1)); [ $j -le $NS ] && { eval "t=\${$j}"; seis ${t%:*} ${t#*:}; }; done
  done
  while [ $j -lt $NS ]; do j=$((j + 1)); eval "t=\${$j}"; seis ${t%:*} ${t#*:}; done
done
echo "eval $(el)"
$H eval $W/work $R > $OUT/seis1m.txt 2>$OUT/eval.err; cat $OUT/seis1m.txt; tail -3 $OUT/eval.err
cp $W/runs/*.lat $OUT/ 2>/dev/null
echo "all done $(el)"
