#!/bin/sh
# GPU start-up (issue #13, goal: fixed start-up <= 0.5 s for bert-base): whole-command wall time of
# `encode` of one text (process start to exit, timed by the shell) and of a small `build`
# (data/example, 40 documents), for several builds or settings side by side, interleaved round by
# round (A B C A B C ...), with the phase timers (SPLADE_TIMINGS=1) of each run; medians per variant.
#
# Run on the GPU machine (device `run`), after the sysroot set-up of bench/gpu.sh when the image lacks
# the -dev libraries (SPLADE_LD: the LD_LIBRARY_PATH of our binaries):
#   VARIANTS="base=DIR1 new=DIR2 new-nowarm=DIR2:SPLADE_GPU_WARM=0" \
#     MODEL=DIR ROUNDS=7 OUT=... sh bench/startup_gpu.sh
# A variant is NAME=DIR (DIR/splade-index) with optional :VAR=VALUE,VAR=VALUE set for its runs.
# Knobs: DEVICE (cuda), TEXT ("hello world"), SKIP_BUILD=1 (no build row). Writes startup_raw.txt
# (every run: variant, round, row, seconds, the timings line) into $OUT; prints Markdown tables.
set -u
OUT=${OUT:-/tmp/splade-startup-out}
mkdir -p "$OUT"
W=${WORK:-/tmp/splade-startup}; mkdir -p "$W"
ROUNDS=${ROUNDS:-7}
RAW=$OUT/startup_raw.txt
: >"$RAW"
now() { date +%s.%N; }

one() { # variant name, dir, env list, round, row label, then the command's arguments
    name=$1 dir=$2 envs=$3 round=$4 row=$5
    shift 5
    t0=$(now)
    # shellcheck disable=SC2086
    env LD_LIBRARY_PATH="${SPLADE_LD:-${LD_LIBRARY_PATH:-}}" SPLADE_TIMINGS=1 $(echo "$envs" | tr ',' ' ') \
        "$dir/splade-index" "$@" >"$W/stdout" 2>"$W/stderr"
    rc=$?
    t1=$(now)
    tl=$(grep -m1 'timings' "$W/stderr" | sed 's/.*timings (encoder)://; s/ s$//')
    [ $rc = 0 ] || tl="FAILED rc $rc: $(tail -1 "$W/stderr")"
    echo "$name|$round|$row|$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')|$tl" >>"$RAW"
}

for round in $(seq 0 "$ROUNDS"); do # round 0: page cache and driver warm-up, not counted
    for v in $VARIANTS; do
        name=${v%%=*}; rest=${v#*=}; dir=${rest%%:*}; envs=""
        case $rest in *:*) envs=${rest#*:} ;; esac
        one "$name" "$dir" "$envs" "$round" "encode 1 text" encode --model "$MODEL" --device "${DEVICE:-cuda}" \
            "${TEXT:-hello world}"
        [ "${SKIP_BUILD:-0}" = 1 ] && continue
        rm -rf "$W/ix-$name"
        one "$name" "$dir" "$envs" "$round" "build 40 docs" build data/example/corpus.jsonl -o "$W/ix-$name" \
            --model "$MODEL" --device "${DEVICE:-cuda}"
    done
done

# medians of rounds >= 1: wall time per variant and row, then each phase (encode row)
awk -F'|' "$(cat bench/median.awk)"'
$2 >= 1 {
    key = $1 SUBSEP $3
    if (!(key in wall)) { order[++nk] = key }
    wall[key] = wall[key] " " $4; runs[key]++
    if ($5 ~ /FAILED/) failed[key]++
    if ($3 == "encode 1 text") {
        if (!($1 in seenv)) { seenv[$1] = 1; vorder[++nv] = $1 }
        np = split($5, f, " ")
        for (i = 1; i + 1 <= np; i += 2) {
            if (!(f[i] in seenp)) { seenp[f[i]] = 1; porder[++npn] = f[i] }
            ph[$1 SUBSEP f[i]] = ph[$1 SUBSEP f[i]] " " f[i + 1]
        }
    }
}
END {
    print "| variant | command | runs | median s | min s | max s | failed |"
    print "|---|---|---:|---:|---:|---:|---:|"
    for (k = 1; k <= nk; k++) {
        split(order[k], p, SUBSEP); n = split(wall[order[k]], a, " ")
        mn = a[1]; mx = a[1]; for (i = 2; i <= n; i++) { if (a[i] + 0 < mn + 0) mn = a[i]; if (a[i] + 0 > mx + 0) mx = a[i] }
        printf "| %s | %s | %d | %.3f | %.3f | %.3f | %d |\n", p[1], p[2], runs[order[k]], median(wall[order[k]]), mn, mx, failed[order[k]]
    }
    print ""
    printf "| phase (encode 1 text, median s) |"; for (v = 1; v <= nv; v++) printf " %s |", vorder[v]; print ""
    printf "|---|"; for (v = 1; v <= nv; v++) printf "---:|"; print ""
    for (q = 1; q <= npn; q++) {
        printf "| %s |", porder[q]
        for (v = 1; v <= nv; v++) { l = ph[vorder[v] SUBSEP porder[q]]; if (l == "") printf " - |"; else printf " %.3f |", median(l) }
        print ""
    }
}' "$RAW" | tee "$OUT/startup_table.md"
