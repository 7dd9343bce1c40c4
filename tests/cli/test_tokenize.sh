#!/bin/sh
# splade-index tokenize end to end: ids of arguments and stdin lines, truncation, and the exit
# status and message of each bad input. Skips (77) without ../shared.
B=${BUILD:-build}/splade-index
V=../shared/data/bert-base-uncased/vocab.txt
[ -r "$V" ] || { echo "skipping: $V not found (../shared beside the clone)"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# ids as Hugging Face's BertTokenizerFast gives them (bert-base-uncased)
out=$("$B" tokenize --vocab "$V" "Hello, world!" "Café [MASK]") || fail "args rc"
[ "$out" = "[101, 7592, 1010, 2088, 999, 102]
[101, 7668, 103, 102]" ] || fail "args: $out"
out=$(printf 'a b\n\nHELLO\n' | "$B" tokenize --model "$(dirname "$V")") || fail "stdin rc"
[ "$out" = "[101, 1037, 1038, 102]
[101, 102]
[101, 7592, 102]" ] || fail "stdin: $out"
out=$("$B" tokenize --vocab "$V" --max-length 3 "hello big world") || fail "max-length rc"
[ "$out" = "[101, 7592, 102]" ] || fail "max-length: $out"
out=$("$B" tokenize --vocab "$V" --cased "Hello hello") || fail "cased rc"
[ "$out" = "[101, 100, 7592, 102]" ] || fail "cased: $out"
out=$(printf 'caf\303\251 \377x\n' | "$B" tokenize --vocab "$V") || fail "invalid utf-8 rc"
[ "$out" = "$("$B" tokenize --vocab "$V" "café x")" ] || fail "invalid utf-8: $out"

# bad inputs: status and a message naming the file or flag
expect_err() { # status, text in stderr, args...
    want=$1; msg=$2; shift 2
    "$B" tokenize "$@" </dev/null >/dev/null 2>"$tmp/err"; rc=$?
    [ $rc -eq "$want" ] || fail "$*: status $rc, want $want"
    grep -qF -- "$msg" "$tmp/err" || fail "$*: stderr lacks '$msg': $(cat "$tmp/err")"
}
: >"$tmp/empty.txt"
expect_err 2 "--model DIR or --vocab FILE" x
expect_err 1 "/nonexistent/vocab.txt" --vocab /nonexistent/vocab.txt x
expect_err 1 "$tmp/vocab.txt" --model "$tmp" x
expect_err 1 "$tmp/empty.txt" --vocab "$tmp/empty.txt" x
expect_err 2 "--max-length" --vocab "$V" --max-length 1 x
expect_err 2 "--max-length" --vocab "$V" --max-length 12abc x
expect_err 2 "unrecognized option" --vocab "$V" --bogus x
"$B" tokenize --help | grep -q "default 512" || fail "--help does not state the default"
echo "tokenize CLI: ok"
