#!/bin/sh
# device call 1 (2026-11-26 fifth session): attention lab v1-v3 + ncu, kernel time split of a build
# batch, build x20 at --batch 64/128/256.
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "[+$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee -a "$OUT/run.log"
SR=/opt/lm-sysroot; mkdir -p $SR && tar xzf .gpu/lm-sysroot.tar.gz -C $SR && tar xzf tmp/cpu_dnnl.tgz -C $SR
L=$SR/usr/lib/x86_64-linux-gnu
export SPLADE_LD="$L:$L/openblas-pthread"
tar xzf tmp/dev1.tgz -C tmp; D=tmp/dev1
say "lab"
$D/lab/attention 1 2 3 > "$OUT/lab.txt" 2>&1; echo "lab rc $?" >> "$OUT/lab.txt"
$D/lab/attention 2 3 --no-check --B 64 --S 256 >> "$OUT/lab.txt" 2>&1
$D/lab/attention 2 3 --no-check --B 64 --S 256 >> "$OUT/lab.txt" 2>&1
grep -E "^\|| FAIL|rc |passed|FAILED" "$OUT/lab.txt"
if [ "${NCU:-1}" = 1 ]; then
  say "ncu attention"
  for k in attn2 attn3; do
    timeout 120 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section MemoryWorkloadAnalysis \
      -k regex:$k -s 2 -c 1 $D/lab/attention ${k#attn} --no-check --B 64 --S 256 --reps 2 > "$OUT/ncu_$k.txt" 2>&1
    grep -E "Duration|Throughput|Warp Cycles Per Issued|Issued Warp|No Eligible|Achieved Occupancy|Registers|Stall|Theoretical Occ" "$OUT/ncu_$k.txt" | head -30
  done
fi
say "pipeline builds"
PEER=.gpu/encode_peers.py TOK=.gpu/bert-base-uncased CORPUS=.gpu/scifact/corpus.jsonl WORK=/tmp/pw \
  BINS="b64=$D/bin b128=$D/b128 b256=$D/b256 b64r=$D/bin" R=20 ROUNDS=${ROUNDS:-1} SKIP_ENCODE=1 SKIP_PEER=1 OUT=$OUT sh bench/gpu_pipeline.sh > /dev/null 2>&1
grep -E "build x20|timings|^\|" "$OUT/pipeline.txt" | head -40
if [ "${NCU2:-1}" = 1 ]; then
  say "kernel split: ncu over an encode of 192 docs, batch 64"
  head -192 /tmp/pw/corpus_x20.jsonl > /tmp/pw/c192.jsonl
  LD_LIBRARY_PATH=$SPLADE_LD timeout 200 ncu --metrics gpu__time_duration.sum --clock-control none --csv \
    $D/bin/splade-index encode --model /tmp/pw/bert-base-splade --device cuda --input /tmp/pw/c192.jsonl > "$OUT/ncu_split.csv" 2> "$OUT/ncu_split.err"
  echo "ncu rc $?"
  python3 - "$OUT/ncu_split.csv" <<'PY' | tee "$OUT/split.txt"
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; rows = rows[1:]
iid, iname, ival = hdr.index("ID"), hdr.index("Kernel Name"), hdr.index("Metric Value")
ks = [(int(r[iid]), r[iname], float(r[ival].replace(",", ""))) for r in rows if r[hdr.index("Metric Name")] == "gpu__time_duration.sum"]
ks.sort()
# the last batch: from the last embedding-like kernel on; take the last third of the kernels
n = len(ks); last = ks[2 * n // 3:]
print("kernels", n, "last third", len(last))
agg = collections.defaultdict(lambda: [0, 0.0])
for _, name, v in last:
    key = name[:70]; agg[key][0] += 1; agg[key][1] += v
tot = sum(v[1] for v in agg.values())
for k, (c, v) in sorted(agg.items(), key=lambda x: -x[1][1]):
    print(f"{v/1e3:10.1f} us {100*v/tot:5.1f}% x{c:3d} {k}")
print(f"total {tot/1e3:.1f} us")
PY
fi
say "done"
