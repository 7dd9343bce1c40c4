#!/bin/sh
# Runs every cmocka test binary and every CLI test script, then prints one closing line
# "tests: N passed, N failed, N skipped" (cmocka's own summaries stay above it).
# CLI_TESTS (optional): the CLI scripts to run instead of all of tests/cli/ (the TSan subset).
BUILD=${BUILD:-build}
pass=0; fail=0; skip=0; broken=""
count() { grep -E "^\[ *$1 *\] [0-9]+ test" "$2" | sed -E 's/.*\] ([0-9]+) test.*/\1/' | awk '{s+=$1} END {print s+0}'; }
log=$(mktemp)
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    echo "== $t"
    "$t" >"$log" 2>&1; rc=$?
    cat "$log"
    p=$(count PASSED "$log"); f=$(count FAILED "$log"); s=$(count SKIPPED "$log")
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # a crash counts as a failure
    [ $rc -ne 0 ] && broken="$broken $t"
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
done
# Fuzz seeds and crash regressions, replayed through each target (built without libFuzzer).
for t in "$BUILD"/fuzz/fuzz_*; do
    [ -x "$t" ] || continue
    n=$(basename "$t"); n=${n#fuzz_}
    inputs=$(ls -d fuzz/corpus/"$n"/* fuzz/regressions/"$n"/* 2>/dev/null)
    echo "== $t"
    if $t $inputs; then pass=$((pass + 1)); else fail=$((fail + 1)); broken="$broken $t"; fi
done
for t in ${CLI_TESTS:-tests/cli/test_*.sh}; do
    [ -f "$t" ] || continue
    echo "== $t"
    BUILD=$BUILD sh "$t" >"$log" 2>&1; rc=$?
    cat "$log"
    case $rc in
        0) pass=$((pass + 1)) ;;
        77) skip=$((skip + 1)) ;;
        *) fail=$((fail + 1)); broken="$broken $t" ;;
    esac
done
rm -f "$log"
[ -n "$broken" ] && echo "failing:$broken"
echo "tests: $pass passed, $fail failed, $skip skipped"
echo "$pass $fail $skip" > "$BUILD/test-counts"
[ $fail -eq 0 ]
