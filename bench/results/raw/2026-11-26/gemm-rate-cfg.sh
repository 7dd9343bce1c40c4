#!/bin/sh
# usage: cfg.sh FILE THREADS ROUNDS cfg... (cfg = G:FO)
f=$1; th=$2; rounds=$3; shift 3
for r in $(seq $rounds); do
  for c in "$@"; do
    G=${c%:*}; FO=${c#*:}
    out=$(SPLADE_DBG_GROUP=$G SPLADE_DBG_GROUP_FO=$FO SPLADE_DBG_GEMM=1 build-nc/bench/bench_encode_ids cache/rand-bert-base $f $th 8 - bf16 2>&1)
    echo "$out" | python3 -c "
import sys,json,re,os
d={}
for l in sys.stdin:
    if l.startswith('{'):
        j=json.loads(l[:l.index('}')+1]); cpu=j['cpu_ms']/j['seqs']
    m=re.match(r'dbg gemm (\S+): ([\d.]+) ms, (\d+) GF/s',l)
    if m: d[m.group(1)]=m.group(3)
    m=re.match(r'dbg gemm total ([\d.]+)',l)
    if m: tot=float(m.group(1))
print('round $r cfg $c load %s cpu/doc %.1f gemm-ms %.0f'%(os.getloadavg()[0],cpu,tot), ' '.join(k+'='+v for k,v in d.items()))
"
  done
done
