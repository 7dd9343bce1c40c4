#!/bin/sh
# realistic 1 M on the GPU host's CPU: main (7c3f2cf, base) against this session's query changes (new:
# windowed TAAT + wtaat's term order), auto / wtaat / taat, one pinned core, 2 alternating rounds.
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "[+$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
export GIT_COMMIT=${GIT_COMMIT:-unknown}
PHASE=prep PEERS=0 SKIP_SEISMIC=1 SKIP_BMP=1 SKIP_PISA=1 GPU_SEARCH=0 OUT=$OUT sh bench/realistic_1m.sh >/dev/null 2>&1
say "prep done"; grep -v "^gcc\|^/usr\|^nvcc\|^ \|^ln \|^ar \|^cc " $OUT/real1m.log | tail -4
BUILD=build-gpu; . bench/device_build.sh
R=$(pwd)
mkdir -p /tmp/bt && tar cf - --exclude=./tmp --exclude=./build-gpu --exclude=./.git --exclude=./cache --exclude=./.gpu . | tar xf - -C /tmp/bt
(cd /tmp/bt && cp $R/tmp/base_q/*.c src/query/ && mkdir -p build-b && touch build-b/.deps-ok && \
  if [ -n "$MK_CC" ]; then make NO_CUDA=1 BUILD=build-b CC="$MK_CC" LDFLAGS="$MK_LD" -j16 build-b/libsplade.a; else make NO_CUDA=1 BUILD=build-b -j16 build-b/libsplade.a; fi) > $OUT/base_build.log 2>&1 || { say "base build FAILED"; tail -5 $OUT/base_build.log; }
for v in base new; do
  lib=build-gpu/libsplade.a; [ $v = base ] && lib=/tmp/bt/build-b/libsplade.a
  ${MK_CC:-cc} -O2 -Iinclude bench/query/sq_latency.c $lib -lutf8proc -ljansson -lopenblas -lcurl -lstreamvbyte -lz -lm -ldl ${MK_LD:--pthread} -o /tmp/sq_$v || say "sq $v FAILED"
done
say "built"
W=tmp/r1m; Q=$(( $(getconf _NPROCESSORS_ONLN) - 1 ))
cpu() { cut -d' ' -f2 "$1" | sort -g | awk '{v[NR]=$1; s+=$1} END {printf "cpu median %.1f mean %.1f p99 %.1f", v[int(NR/2)+1], s/NR, v[int(NR*0.99)+1]}'; }
for r in 1 2; do
  for a in ${METHODS:-auto wtaat taat}; do
    for v in base new; do
      taskset -c $Q /tmp/sq_$v $W/idx/ours $W/q.vec.jsonl $OUT/$v.$a.trec $OUT/$v.$a.$r.lat $a 10 1 > $OUT/$v.$a.$r.out 2>&1
      echo "r$r $a $v: $(tail -1 $OUT/$v.$a.$r.out | sed 's/.*queries, //' | cut -c1-90) | $(cpu $OUT/$v.$a.$r.lat)"
    done
  done
done
for a in ${METHODS:-auto wtaat taat}; do cmp -s $OUT/base.$a.trec $OUT/new.$a.trec && echo "$a: run files identical" || echo "$a: RUNS DIFFER"; done
say "done"
