#!/bin/sh
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
tmp/dev3/attention 2 7 8 > "$OUT/lab.txt" 2>&1; echo "lab rc $?" >> "$OUT/lab.txt"
for r in 1 2; do tmp/dev3/attention 2 7 8 --no-check --B 64 --S 256 >> "$OUT/lab.txt" 2>&1; done
tmp/dev3/attention 2 7 8 --no-check --B 16 --S 512 >> "$OUT/lab.txt" 2>&1
grep -E "^\| [0-9]|v5|v7|v8|FAIL|rc |passed|FAILED" "$OUT/lab.txt" | head -60
