#!/bin/sh
# device call 1 (2026-11-26, sixth session): the build's kernel time by class over a random sample of
# SciFact x20 (10 batches of 64, the build's own batching), scaled to the whole build, and one
# whole build x20 for its wall time (main dc7bcd3).
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "[+$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/run.log"
SR=/opt/lm-sysroot; mkdir -p $SR && tar xzf .gpu/lm-sysroot.tar.gz -C $SR
L=$SR/usr/lib/x86_64-linux-gnu
export SPLADE_LD="$L:$L/openblas-pthread"
tar xzf tmp/dev12.tgz -C tmp; D=tmp/dev12
mkdir -p .gpu/scifact && gunzip -c tmp/corpus.jsonl.gz > .gpu/scifact/corpus.jsonl
say "build x20, 2 rounds"
PEER=.gpu/encode_peers.py TOK=.gpu/bert-base-uncased CORPUS=.gpu/scifact/corpus.jsonl WORK=/tmp/pw \
  BINS="now=$D" R=20 ROUNDS=2 SKIP_ENCODE=1 SKIP_PEER=1 OUT=$OUT sh bench/gpu_pipeline.sh > /dev/null 2>&1
grep -E "build x20|timings|^\|" "$OUT/pipeline.txt" | head -20
say "sample: 640 random documents of x20 (seed 7), their tokens"
python3 - <<'PY'
import json, random
from transformers import AutoTokenizer
lines = open('/tmp/pw/corpus_x20.jsonl').read().splitlines()
random.seed(7); s = random.sample(lines, 640)
open('/tmp/pw/s640.jsonl', 'w').write('\n'.join(s) + '\n')
tok = AutoTokenizer.from_pretrained('.gpu/bert-base-uncased')
n = 0
for l in s:
    d = json.loads(l); t = (d.get('title', '') + ' ' + d['text']).strip() if d.get('title') else d['text']
    n += len(tok(t, truncation=True, max_length=256)['input_ids'])
print('sample tokens (approx, title + text)', n)
open('/tmp/pw/s640.tokens', 'w').write(str(n))
PY
say "ncu over encode of the sample"
LD_LIBRARY_PATH=$SPLADE_LD timeout 300 ncu --metrics gpu__time_duration.sum --clock-control none --csv \
  $D/splade-index encode --model /tmp/pw/bert-base-splade --device cuda --input /tmp/pw/s640.jsonl > "$OUT/ncu_s640.csv" 2> "$OUT/ncu_s640.err"
echo "ncu rc $?"; tail -3 "$OUT/ncu_s640.err"
python3 - "$OUT/ncu_s640.csv" <<'PY' | tee "$OUT/split.txt"
import csv, sys, collections, re
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; rows = rows[1:]
iid, iname, ival = hdr.index("ID"), hdr.index("Kernel Name"), hdr.index("Metric Value")
ks = [(int(r[iid]), r[iname], float(r[ival].replace(",", ""))) for r in rows if r[hdr.index("Metric Name")] == "gpu__time_duration.sum"]
ks.sort()
def cls(n):
    l = n.lower()
    if 'lmhead' in l: return 'head'
    if 'attn' in l or 'attention' in l: return 'attention'
    if 'nvjet' in l or 'gemm' in l or 'cutlass' in l or 'sm90_' in l: return 'gemm'
    if 'norm' in l or 'ln' in l: return 'add+ln'
    return 'other'
agg = collections.defaultdict(lambda: [0, 0.0]); names = collections.defaultdict(lambda: [0, 0.0])
for _, name, v in ks:
    agg[cls(name)][0] += 1; agg[cls(name)][1] += v
    names[name[:90]][0] += 1; names[name[:90]][1] += v
tot = sum(v[1] for v in agg.values())
tokens = int(open('/tmp/pw/s640.tokens').read())
print("kernels", len(ks), "total us", round(tot / 1e3, 1), "tokens", tokens)
for k, (c, v) in sorted(agg.items(), key=lambda x: -x[1][1]):
    print(f"class {k:10s} {v/1e3:10.1f} us {100*v/tot:5.1f}%  x{c:4d}  whole build x20 (24.85 M tokens): {v/1e9*24.85e6/tokens:6.2f} s")
print(f"all kernels scaled to the whole build: {tot/1e9*24.85e6/tokens:.2f} s by tokens, {tot/1e9*103660/640:.2f} s by documents")
for k, (c, v) in sorted(names.items(), key=lambda x: -x[1][1])[:25]:
    print(f"  {v/1e3:9.1f} us x{c:4d} {k}")
PY
say "done"
