#!/usr/bin/env bash
# Issue #14's side-by-side run: ../shared/peer/query/run.sh with our new methods (wtaat, auto) and the
# realistic collection's operating points, in two parts so that ours can be re-run alone:
#   LOCK=... SRC=<checkout with build-nc/> PY=<venv python> SQ=<bench/query/sq_latency binary> \
#     bash bench/query/run.sh DOCS.jsonl QUERIES.jsonl OUT SET PART [BUILD_REPEATS=1] [QUERY_REPEATS=2]
# SET: scifact | real (tools/make_realistic_collection.py); PART: ours | peers | all.
# Every timed step holds $LOCK (builds at nice 10), one thread always; results in OUT/results.jsonl.
set -euo pipefail
: "${LOCK:?set LOCK to a benchmark lock file}" "${SRC:?}" "${PY:?}" "${SQ:?}"
DOCS=$1 QUERIES=$2 OUT=$3 SET=$4 PART=$5 BR=${6:-1} QR=${7:-2}
H="$PY $(cd "$(dirname "$0")/../../../shared/peer/query" && pwd)/peers_query.py"
export RAYON_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
mkdir -p "$OUT/idx" "$OUT/runs"
R=$OUT/results.jsonl
[ -f "$OUT/work/exact.json" ] || nice -n 10 $H exact "$DOCS" "$QUERIES" "$OUT/work"

build() { # SYSTEM LABEL [--param k=v ...]
  local sys=$1 label=$2; shift 2
  for i in $(seq "$BR"); do
    flock "$LOCK" nice -n 10 $H build "$sys" "$DOCS" "$OUT/idx/$label" --label "$label" "$@" | tail -1 >> "$R"
  done
}
query() { # SYSTEM LABEL POINT [--param k=v ...]
  local sys=$1 label=$2 point=$3; shift 3
  for i in $(seq "$QR"); do
    flock "$LOCK" $H query "$sys" "$OUT/idx/$label" "$QUERIES" "$OUT/runs/$label.$point.trec" \
      "$OUT/runs/$label.$point.$i.lat" --label "$label" --point "$point" "$@" | tail -1 >> "$R"
  done
}

if [ "$PART" != peers ]; then
  [ -d "$OUT/idx/ours" ] || build ours ours --param bin="$SRC/build-nc/splade-index"
  for a in auto wtaat bmp wmaxscore bmm maxscore taat; do query ours ours "$a" --param sq_latency="$SQ" --param algo=$a; done
fi
[ "$PART" = ours ] && exit 0

build pysplade pysplade
query pysplade pysplade exhaustive
build pisa pisa
for a in maxscore block_max_maxscore block_max_wand; do query pisa pisa "$a" --param algo=$a; done
build seismic seismic   # pyseismic-lsr defaults: n_postings 3500, centroid_fraction 0.1, summary_energy 0.4
query seismic seismic qc10-hf0.9 --param query_cut=10 --param heap_factor=0.9
query seismic seismic qc5-hf0.9 --param query_cut=5 --param heap_factor=0.9
query seismic seismic qc3-hf0.9 --param query_cut=3 --param heap_factor=0.9
build bmp bmp-b32-l127 --param bsize=32 --param levels=127   # 7-bit impacts: u16 sums do not wrap
query bmp bmp-b32-l127 exact --param alpha=1 --param beta=1
query bmp bmp-b32-l127 a1-b0.6 --param alpha=1 --param beta=0.6
