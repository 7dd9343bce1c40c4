#!/bin/sh
# Errors say what is wrong: an unknown --algo names the choices, an eval cutoff that is not a
# positive integer is named as such (not "unknown metric"), and "model not found" names where the
# model was looked for (--model, $SPLADE_MODEL or the default folders) instead of always "--model".
# Needs no model.
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
T=$(mktemp -d /tmp/splade_cli_msgXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
unset SPLADE_MODEL SPLADE_INDEX SPLADE_CACHE

# expect RC PATTERN CMD...: exit RC and the fixed string PATTERN on stderr
expect() {
    want=$1 pattern=$2
    shift 2
    "$@" > "$T/out" 2> "$T/err"
    rc=$?
    [ $rc -eq "$want" ] || fail "$*: exit $rc (want $want): $(cat "$T/err")"
    grep -qF -- "$pattern" "$T/err" || fail "$*: message: $(cat "$T/err")"
}

expect 2 'splade-index query: unknown --algo "bogus" (choose auto|wtaat|bmp|wmaxscore|bmm|maxscore|taat)' \
    "$BIN" query --algo bogus "text"
[ "$(wc -l < "$T/err")" -eq 1 ] || fail "--algo bogus: more than the reason: $(cat "$T/err")"

printf '{"id": "d1", "vector": {"cat": 1.5}}\n' > "$T/v.jsonl"
printf '{"id": "q1", "vector": {"cat": 1.0}}\n' > "$T/q.jsonl"
"$BIN" build --vectors "$T/v.jsonl" -o "$T/ix" --quiet || fail "build"
"$BIN" query -i "$T/ix" --vector-queries "$T/q.jsonl" -o "$T/run.trec" || fail "query"
printf 'q1 0 d1 1\n' > "$T/qrels"
for m in ndcg@0 ndcg@-1 ndcg@10x ndcg@ recall@99999999999 ndcg_cut_0; do
    expect 2 "metric \"$m\": the cutoff" "$BIN" eval --run "$T/run.trec" --qrels "$T/qrels" --metrics "$m"
    grep -qF "must be a positive integer" "$T/err" || fail "$m: message: $(cat "$T/err")"
done
expect 2 'metric "mrr" needs a cutoff: mrr@K' "$BIN" eval --run "$T/run.trec" --qrels "$T/qrels" --metrics mrr
expect 2 'unknown metric "bleu@4"' "$BIN" eval --run "$T/run.trec" --qrels "$T/qrels" --metrics ndcg@10,bleu@4
"$BIN" eval --run "$T/run.trec" --qrels "$T/qrels" --metrics ndcg@10,map,ndcg_cut_5 > "$T/out" || fail "good metrics"
grep -q "^ndcg_cut_5\|^ndcg@5 " "$T/out" || fail "good metrics output: $(cat "$T/out")"

# GPU lists (issue #17): a malformed --device names the accepted forms, before any model is looked for
for d in cuda: cuda:x cuda:-1 cuda:0, cuda:1234; do
    expect 2 "--device \"$d\": expected cuda:all or cuda:I,J" "$BIN" encode --device "$d" x
    expect 2 "--device \"$d\": expected cuda:all or cuda:I,J" "$BIN" build "$T/v.jsonl" -o "$T/bad.idx" --device "$d"
    [ -e "$T/bad.idx" ] && fail "build --device $d left $T/bad.idx"
done

# model resolution: the message names the source it used
expect 1 'model "/no/such/model" not found (tried /no/such/model)' "$BIN" encode --model /no/such/model x
expect 1 'model "/no/such/env" (from $SPLADE_MODEL) not found' env SPLADE_MODEL=/no/such/env "$BIN" encode x
mkdir "$T/home" "$T/cwd"
(cd "$T/cwd" && HOME="$T/home" "$BIN" encode x) > "$T/out" 2> "$T/err"
grep -qF "no model found (tried $T/home/.cache/splade-index/" "$T/err" || fail "defaults: $(cat "$T/err")"
grep -qF -- "--model;" "$T/err" && fail "names --model though none was given: $(cat "$T/err")"
exit 0
