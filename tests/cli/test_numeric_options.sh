#!/bin/sh
# Numeric options are parsed strictly: text, trailing garbage, a sign, overflow, an empty string or a
# value outside the accepted range is a usage error (exit 2) naming the option and the range --
# never 0 hits (-k abc), 10 (-k 10x) or the default without a word (-k -1, -k 99999999999).
# Parsing happens before any model or index is read, so this needs neither.
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
T=$(mktemp -d /tmp/splade_cli_numXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# bad CMD OPTION RANGE [ARGS...]: every bad form of OPTION is refused naming it and RANGE
bad() {
    cmd=$1 opt=$2 range=$3
    shift 3
    for v in abc 10x -1 0 99999999999 "" " 5" 1e3 0x10; do
        "$BIN" $cmd "$opt" "$v" "$@" > "$T/out" 2> "$T/err"
        rc=$?
        [ $rc -eq 2 ] || fail "$cmd $opt '$v': exit $rc (want 2): $(cat "$T/err")"
        grep -qF "splade-index $cmd: $opt: '$v' is not an integer in $range" "$T/err" ||
            fail "$cmd $opt '$v': message: $(cat "$T/err")"
        [ ! -s "$T/out" ] || fail "$cmd $opt '$v': printed $(cat "$T/out")"
    done
}

bad query -k 1..2147483647 "some text"
bad query --threads 1..1024 --queries q.jsonl
bad query --query-cut 1..2147483647 --queries q.jsonl
bad query --rescore 1..65536 --query-cut 3 --queries q.jsonl
"$BIN" query --rescore 50 --queries q.jsonl > "$T/out" 2> "$T/err"
[ $? -eq 2 ] || fail "--rescore without --query-cut: not a usage error"
grep -qF -- "--rescore needs --query-cut" "$T/err" || fail "--rescore without --query-cut: message: $(cat "$T/err")"
bad query --budget 1..2147483647 --query-cut 3 --rescore 5 --queries q.jsonl
"$BIN" query --budget 500 --query-cut 3 --queries q.jsonl > "$T/out" 2> "$T/err"
[ $? -eq 2 ] || fail "--budget without --rescore: not a usage error"
grep -qF -- "--budget needs --rescore" "$T/err" || fail "--budget without --rescore: message: $(cat "$T/err")"
"$BIN" query --budget 500 --query-cut 3 --rescore 5 --bound-factor 0.5 --queries q.jsonl > "$T/out" 2> "$T/err"
[ $? -eq 2 ] || fail "--budget with --bound-factor: not a usage error"
grep -qF -- "--budget and --bound-factor both prune" "$T/err" || fail "--budget with --bound-factor: message: $(cat "$T/err")"
bad build --threads 1..1024 corpus.jsonl
bad build --batch 1..4096 corpus.jsonl
bad build --max-length 2..8192 corpus.jsonl
bad build --threads 1..1024 --vectors v.jsonl
bad build --top-k 1..2147483647 corpus.jsonl
bad add --batch 1..4096 corpus.jsonl
bad update --max-length 2..8192 corpus.jsonl
bad add --threads 1..1024 --vectors v.jsonl
bad encode --threads 1..1024 text
bad encode --batch 1..4096 text
bad encode --max-length 2..8192 text
bad encode --top-k 1..2147483647 text
bad tokenize --max-length 2..536870911 --vocab vocab.txt text
for o in --B --S --D --V --iters; do
    case $o in --B) r=1..4096 ;; --S) r=1..8192 ;; --D) r=1..65536 ;; --V) r=1..4194304 ;; --iters) r=1..1000000 ;; esac
    bad bench-lmhead $o $r
done

# --threshold: a finite number >= 0 (one parser for every command that encodes: src/cli/encoder_opts.c)
for cmd in "encode text" "build corpus.jsonl" "add corpus.jsonl"; do
    for v in abc 0.5x -1 nan inf 1e999 "" " 1"; do
        # shellcheck disable=SC2086
        "$BIN" $cmd --threshold "$v" > "$T/out" 2> "$T/err"
        rc=$?
        [ $rc -eq 2 ] || fail "$cmd --threshold '$v': exit $rc (want 2)"
        grep -qF "splade-index ${cmd%% *}: --threshold: '$v' is not a finite number >= 0" "$T/err" ||
            fail "$cmd --threshold '$v': message: $(cat "$T/err")"
    done
done

# --bound-factor: a number in [0.01, 1]
for v in abc 0.5x -1 0 1.5 nan ""; do
    "$BIN" query --bound-factor "$v" --queries q.jsonl > "$T/out" 2> "$T/err"
    rc=$?
    [ $rc -eq 2 ] || fail "--bound-factor '$v': exit $rc (want 2)"
    grep -qF "splade-index query: --bound-factor: '$v'" "$T/err" || fail "--bound-factor '$v': message: $(cat "$T/err")"
done

# --recall-target: a number in (0, 1] (0.001..1), with a batch, instead of the explicit options
for v in abc 0.9x -1 0 1.5 nan ""; do
    "$BIN" query --recall-target "$v" --queries q.jsonl > "$T/out" 2> "$T/err"
    rc=$?
    [ $rc -eq 2 ] || fail "--recall-target '$v': exit $rc (want 2)"
    grep -qF "splade-index query: --recall-target: '$v' is not a number in 0.001..1" "$T/err" ||
        fail "--recall-target '$v': message: $(cat "$T/err")"
done
"$BIN" query --recall-target 0.9 --query-cut 5 --queries q.jsonl > "$T/out" 2> "$T/err"
[ $? -eq 2 ] || fail "--recall-target with --query-cut: not a usage error"
grep -qF -- "--recall-target picks --query-cut" "$T/err" || fail "--recall-target with --query-cut: message: $(cat "$T/err")"
"$BIN" query --recall-target 0.9 "some text" > "$T/out" 2> "$T/err"
[ $? -eq 2 ] || fail "--recall-target with a text: not a usage error"
grep -qF -- "--recall-target measures recall on a batch" "$T/err" || fail "--recall-target with a text: message: $(cat "$T/err")"

# the edges of each range are accepted: the command goes on to its next check (a missing file)
"$BIN" query -k 1 --threads 1024 -i "$T/none" "x" 2> "$T/err"
grep -q "no index here" "$T/err" || fail "-k 1 --threads 1024 refused: $(cat "$T/err")"
"$BIN" build --batch 4096 --max-length 2 --threads 1 --vectors "$T/none.jsonl" -o "$T/ix" 2> "$T/err"
grep -q "none.jsonl" "$T/err" || fail "build edges refused: $(cat "$T/err")"
exit 0
