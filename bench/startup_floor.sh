#!/bin/sh
# The CUDA start-up floor beside our own start-up (issue #13: fixed start-up <= 0.5 s): whole-process
# wall times of bench/startup_floor.c's modes (cuInit, the context, cuBLASLt's load, a big
# allocation, the context's release, _exit) and of `splade-index encode` of one text, interleaved
# round by round; medians of rounds >= 1 (round 0 warms the page cache and the driver).
# Run on the GPU machine (device `run`), after a build (bench/gpu.sh, or PREBUILT dir):
#   BIN=build-gpu/splade-index MODEL=DIR ROUNDS=7 OUT=... sh bench/startup_floor.sh
# MODELS="name=DIR name2=DIR2:VAR=V,VAR2=V2" instead of MODEL: one `encode` row per model (with its
# settings). Without BIN/MODEL(S) only the probe's modes run. Writes startup_floor_raw.txt and a table to $OUT.
set -u
OUT=${OUT:-/tmp/splade-startup-floor}
mkdir -p "$OUT"
ROUNDS=${ROUNDS:-7}
CUDA=${CUDA_HOME:-/usr/local/cuda}
RAW=$OUT/startup_floor_raw.txt
: >"$RAW"
P=/tmp/startup_floor
gcc -O2 -I"$CUDA/include" bench/startup_floor.c -o $P -L"$CUDA/lib64/stubs" -lcuda -ldl || exit 1
export LD_LIBRARY_PATH="$CUDA/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
MODES=${MODES:-"true init init,ctx init,ctx,fast init,ctx,release init,ctx,alloc init,ctx,alloc,free lt,init,ctx,lth lt,blas,init,ctx,lth lt,blas,init,ctx,lth,alloc"}
now() { date +%s.%N; }
one() { # label, then the command
    label=$1; shift
    t0=$(now)
    "$@" >/dev/null 2>"$OUT/stderr"
    rc=$?
    t1=$(now)
    steps=$(grep -m1 -E '^steps:|timings' "$OUT/stderr" | sed 's/.*timings (encoder)://; s/^steps://')
    echo "$label|$round|$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')|rc $rc|$steps" >>"$RAW"
}
for round in $(seq 0 "$ROUNDS"); do
    for m in $MODES; do
        if [ "$m" = true ]; then one true /bin/true; else one "$m" $P "$m"; fi
    done
    [ -n "${BIN:-}" ] || continue
    for mv in ${MODELS:-${MODEL:+bert-base=$MODEL}}; do
        name=${mv%%=*}; rest=${mv#*=}; dir=${rest%%:*}; envs=""
        case $rest in *:*) envs=$(echo "${rest#*:}" | tr ',' ' ') ;; esac
        # shellcheck disable=SC2086
        one "ours encode 1 text, $name" env SPLADE_TIMINGS=1 $envs "$BIN" encode --model "$dir" --device cuda "hello world"
    done
done
awk -F'|' "$(cat bench/median.awk)"'
$2 >= 1 {
    if (!($1 in w)) order[++n] = $1
    w[$1] = w[$1] " " $3
    np = split($5, f, " ")
    for (i = 1; i + 1 <= np; i += 2) { if (!(($1, f[i]) in s)) so[$1] = so[$1] " " f[i]; s[$1, f[i]] = s[$1, f[i]] " " f[i + 1] }
}
END {
    print "| mode | median s (whole process) | min | max | in-process steps (median s) |"
    print "|---|---:|---:|---:|---|"
    for (k = 1; k <= n; k++) {
        m = order[k]; c = split(w[m], a, " "); mn = a[1]; mx = a[1]
        for (i = 2; i <= c; i++) { if (a[i] + 0 < mn + 0) mn = a[i]; if (a[i] + 0 > mx + 0) mx = a[i] }
        st = ""; c = split(so[m], q, " ")
        for (i = 1; i <= c; i++) st = st sprintf("%s %.3f; ", q[i], median(s[m, q[i]]))
        printf "| %s | %.3f | %.3f | %.3f | %s |\n", m, median(w[m]), mn, mx, st
    }
}' "$RAW" | tee "$OUT/startup_floor_table.md"
