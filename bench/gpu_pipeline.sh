#!/bin/sh
# The GPU `build` and `encode` end to end (issue #13 item 4): whole-command wall time, start-up
# included, on SciFact xR with a bert-base-shaped SPLADE model, for one or more builds of the CLI
# side by side (A B A B), with the phase timers (SPLADE_TIMINGS=1: one "timings" line per command),
# then the PyTorch peers on the same corpus and model (../shared/peer/encode_peers.py: torch.compile
# and sentence-transformers' SparseEncoder; transformers eager with PEER_EAGER=1).
#
# Run on the GPU machine (device `run`), after the sysroot set-up of bench/gpu.sh when the image lacks
# the -dev libraries (SPLADE_LD: the LD_LIBRARY_PATH of our binaries, e.g. the sysroot's libraries):
#   BINS="base=DIR1 new=DIR2" (an entry may end in @DEVICE: "one=DIR@cuda:0 all=DIR@cuda:all") TOK=DIR_WITH_vocab.txt+tokenizer_config.json CORPUS=corpus.jsonl \
#     PEER=encode_peers.py OUT=... sh bench/gpu_pipeline.sh
# Knobs: R (copies of the corpus, 20), R_SMALL (4: the encode row and the identity check), ROUNDS (2),
# ENCODE_ROUNDS (rounds with the encode xR_SMALL row; default all), MODEL (a model folder; made with
# `encode_peers.py make` when absent), SKIP_PEER=1, PEER_TIMEOUT (s, 240), BATCH (peer, 128), BUILD_ARGS
# (extra `build` options), SKIP_ENCODE=1, DEVICE (cuda; cpu for a smoke test here; an entry's @DEVICE wins). Index identity is
# checked on xR_SMALL with SPLADE_GPU_GEMM_TUNE=0 (a timed GEMM choice may differ between any two runs).
# Prints Markdown tables; writes pipeline.txt (and peer.log) into $OUT.
set -u
OUT=${OUT:-/tmp/splade-pipeline-out}
mkdir -p "$OUT"
R=${R:-20}; R_SMALL=${R_SMALL:-4}; ROUNDS=${ROUNDS:-2}
W=${WORK:-/tmp/splade-pipeline}; mkdir -p "$W"
MODEL=${MODEL:-$W/bert-base-splade}
LOG="$OUT/pipeline.txt"
T0=$(date +%s.%N)
say() { echo "[pipeline +$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')s] $*" | tee -a "$LOG"; }
now() { date +%s.%N; }
dt() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

if [ ! -f "$MODEL/model.safetensors" ]; then
    say "making the bert-base-shaped model (random weights, decoder bias shifted to ~200 terms/doc)"
    PYTHONUNBUFFERED=1 python3 "$PEER" make "$MODEL" "$TOK" "$CORPUS" >>"$LOG" 2>&1 || { say "model FAILED"; exit 1; }
fi
# SciFact xR with unique ids (the copy number appended): a build refuses duplicate ids
copies() {
    python3 - "$CORPUS" "$1" "$2" <<'PY'
import json, sys
src, r, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines = [json.loads(l) for l in open(src) if l.strip()]
with open(out, "w") as f:
    for c in range(r):
        for d in lines:
            d = dict(d); d["_id"] = f"{d['_id']}-{c}" if c else d["_id"]
            f.write(json.dumps(d) + "\n")
PY
}
C=$W/corpus_x$R.jsonl; CS=$W/corpus_x$R_SMALL.jsonl
[ -f "$C" ] || copies "$R" "$C"; [ -f "$CS" ] || copies "$R_SMALL" "$CS"
ND=$(wc -l <"$C"); NDS=$(wc -l <"$CS")
say "corpus: $ND docs (x$R), $NDS docs (x$R_SMALL); model $MODEL; $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null)"

timed() { # label, then the command; stderr kept (the timings line), stdout to $W/stdout
    label=$1; shift
    t0=$(now)
    LD_LIBRARY_PATH=${SPLADE_LD:-${LD_LIBRARY_PATH:-}} SPLADE_TIMINGS=1 SOURCE_DATE_EPOCH=1700000000 "$@" >"$W/stdout" 2>"$W/stderr"; rc=$?
    t1=$(now)
    echo "$label: $(dt "$t0" "$t1") s (rc $rc)" >>"$LOG"
    { grep -E 'timings|encoding on|error|FAILED' "$W/stderr"; grep -E '^(indexed|index:)' "$W/stdout"; } |
        sed 's/^/    /' >>"$LOG"
    [ $rc = 0 ] || tail -5 "$W/stderr" >>"$LOG"
    LAST=$(dt "$t0" "$t1")
}

# one BINS entry: NAME=DIR[@DEVICE] -> name, bin, dev
entry() {
    name=${1%%=*}; rest=${1#*=}; dir=${rest%%@*}; bin=$dir/splade-index
    dev=${DEVICE:-cuda}; [ "$dir" != "$rest" ] && dev=${rest#*@}
}
for round in $(seq 1 "$ROUNDS"); do
    for spec in $BINS; do
        entry "$spec"
        # shellcheck disable=SC2086
        timed "round $round $name build x$R" "$bin" build "$C" -o "$W/ix-$name" --model "$MODEL" --device "$dev" ${BUILD_ARGS:-}
        echo "| $name | build x$R | $ND | $LAST | $(awk -v n="$ND" -v s="$LAST" 'BEGIN { printf "%.0f", n / s }') |" >>"$W/rows"
        [ "$round" = 1 ] && cp "$W/stderr" "$OUT/build-$name.stderr" 2>/dev/null
        timed "round $round $name encode 1 text" "$bin" encode --model "$MODEL" --device "$dev" "hello world"
        echo "| $name | encode 1 text (start-up) | 1 | $LAST | - |" >>"$W/rows"
        [ "${SKIP_ENCODE:-0}" = 1 ] || [ "$round" -gt "${ENCODE_ROUNDS:-$ROUNDS}" ] && continue
        timed "round $round $name encode x$R_SMALL" "$bin" encode --model "$MODEL" --device "$dev" --input "$CS"
        mv "$W/stdout" "$W/vec-$name.jsonl"
        echo "| $name | encode x$R_SMALL (JSONL) | $NDS | $LAST | $(awk -v n="$NDS" -v s="$LAST" 'BEGIN { printf "%.0f", n / s }') |" >>"$W/rows"
    done
done
# identity with GEMM tuning off (a timed algorithm choice can differ between any two runs): the x$R_SMALL
# index of every build against the first's
for spec in $BINS; do
    entry "$spec"
    SPLADE_GPU_GEMM_TUNE=0 timed "$name build x$R_SMALL, tuning off" "$bin" build "$CS" -o "$W/ixt-$name" --model "$MODEL" --device "$dev"
done
first=""
for spec in $BINS; do
    name=${spec%%=*}
    if [ -z "$first" ]; then first=$name; continue; fi
    same=yes; for f in "$W/ixt-$first"/*; do cmp -s "$f" "$W/ixt-$name/$(basename "$f")" || same=no; done
    say "tuning off, x$R_SMALL: index of $name identical to $first's: $same"
done
# identity: index bytes and JSONL of every build against the first (tuning on: may differ by timing alone)
first=""
for spec in $BINS; do
    name=${spec%%=*}
    if [ -z "$first" ]; then first=$name; continue; fi
    same=yes; for f in "$W/ix-$first"/*; do cmp -s "$f" "$W/ix-$name/$(basename "$f")" || same=no; done
    vs=-; [ -f "$W/vec-$first.jsonl" ] && { cmp -s "$W/vec-$first.jsonl" "$W/vec-$name.jsonl" && vs=yes || vs=no; }
    say "identical to $first: index $same, encode JSONL $vs"
done
{ echo; echo "| build | command | docs | s | docs/s |"; echo "|---|---|---:|---:|---:|"; cat "$W/rows"; } | tee -a "$LOG"

if [ "${SKIP_PEER:-0}" != 1 ]; then
    say "peers on x$R (encode_peers.py run, batch ${BATCH:-128}, timeout ${PEER_TIMEOUT:-240}s)"
    P=$W/peer.py
    if [ "${PEER_EAGER:-0}" = 1 ]; then cp "$PEER" "$P"; else
        sed 's/for name, fn in (("hf_eager_bf16_sdpa", splade), ("hf_torch_compile_dynamic", compiled)):/for name, fn in (("hf_torch_compile_dynamic", compiled),):/' "$PEER" >"$P"
    fi
    PYTHONUNBUFFERED=1 timeout "${PEER_TIMEOUT:-240}" python3 "$P" run "$MODEL" "$C" 256 "${BATCH:-128}" \
        >"$OUT/peer.log" 2>&1 || say "  peer ended early (rc $?)"
    grep '^{' "$OUT/peer.log" | tee -a "$LOG"
fi
say "done"
