#!/bin/sh
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
M=""
for r in barrier long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle dispatch_stall no_instruction sleeping membar lg_throttle selected not_selected tex_throttle drain branch_resolving misc imc_miss; do
  M="$M${M:+,}smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
M="$M,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active"
for v in 7 2; do
  timeout 120 ncu --metrics "$M" -k regex:attn -s 3 -c 1 tmp/dev6/attention $v --no-check --B 64 --S 256 --reps 2 > "$OUT/ncu_v$v.txt" 2>&1
  echo "== v$v"; grep -E "ratio|pct|per_cycle" "$OUT/ncu_v$v.txt" | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | awk '{print $1, $NF}'
done
