#!/bin/sh
# realistic 1 M: a Seismic build that reaches recall 0.95 / 0.99 there, against ours (approximate settings
# and exact auto), alternating on one idle core; recall@10 of every run against the float brute force
# (the harness's eval) and ours' exact TAAT (bench/query/recall.py). Run under bench/device_bg.sh.
#   SEIS_BUILD="n_postings=7000 centroid_fraction=0.05 max_fraction=1.0" SEIS="qc:hf ..." OURS="qc:R:B ..."
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$(date +%s); el() { echo "+$(( $(date +%s) - T0 ))s"; }
export GIT_COMMIT=${GIT_COMMIT:-unknown}
PHASE=prep PEERS=1 SKIP_SEISMIC=1 SKIP_BMP=1 SKIP_PISA=1 GPU_SEARCH=0 PREP_WAIT=1 OUT=$OUT sh bench/realistic_1m.sh >/dev/null 2>&1
echo "prep started builds $(el)"; grep -v "^$" $OUT/real1m.log | tail -3
W=tmp/r1m SQ=build-gpu/bench/sq_latency NC=$(getconf _NPROCESSORS_ONLN)
Q=$((NC - 1))
export PYTHONPATH=/tmp/site PEERS_QUERY=.gpu/peer_query/peers_query.py RAYON_NUM_THREADS=1 OMP_NUM_THREADS=1
H="python3 bench/query/peers_mt.py"
P=""; for kv in ${SEIS_BUILD:-n_postings=7000 centroid_fraction=0.05 max_fraction=1.0}; do P="$P --param $kv"; done
# shellcheck disable=SC2086
( BUILD_THREADS=$((NC - 2)) RAYON_NUM_THREADS=$((NC - 2)) taskset -c 0-$((NC - 3)) /usr/bin/time -v $H build seismic $W/docs.vec.jsonl $W/idx/seis --label seis $P \
    >$OUT/seis.build.txt 2>&1; echo done >$W/seis.done ) &
i=0; while [ ! -f $W/seis.done ] || [ ! -f $W/exact.done ] || [ ! -f $W/ours.done ]; do
  sleep 10; i=$((i + 10)); [ $((i % 120)) = 0 ] && echo "waiting $(el): $(ls $W/*.done | tr '\n' ' ')$(grep -h "secs\|Building" $OUT/seis.build.txt | tail -1)"
done
echo "builds done $(el)"; grep -h "secs\|^{\|Elapsed\|Maximum res" $OUT/seis.build.txt; grep -E 'Elapsed|Maximum resident' $W/ours.build.txt
grep '^{' $OUT/seis.build.txt > $OUT/results.jsonl; R=$OUT/results.jsonl
cpu() { cut -d' ' -f2 "$1" | sort -g | awk '{v[NR]=$1; s+=$1} END {printf "median %.1f mean %.1f p99 %.1f", v[int(NR/2)+1], s/NR, v[int(NR*0.99)+1]}'; }
mkdir -p $W/runs
taskset -c $Q $SQ $W/idx/ours $W/q.vec.jsonl $W/runs/taat.trec $OUT/taat.lat taat 10 1 >/dev/null 2>&1
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
  ours exact
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
