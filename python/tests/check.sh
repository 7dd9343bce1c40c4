#!/bin/sh
# `make python-check` (part of `make test`): the Python package against the library and CLI just
# built in $BUILD. Installs numpy, scipy and pytest where the interpreter lacks them (into
# $BUILD/python-deps, pip --target: no root, no virtualenv needed, PEP 668 systems included), and the
# integrations' pyarrow, pymilvus, milvus-lite and ray where it can (optional), installs
# the package from python/ with $BUILD/libsplade.so.0 bundled (into $BUILD/python-pkg), runs pytest.
# Exit 0 pass (or visible skip when pip is missing), 1 fail; "$pass $fail $skip" goes to
# $BUILD/python-counts for make test's closing line. PYTHON=... picks the interpreter.
BUILD=${BUILD:-build}
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
PY=${PYTHON:-python3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "$BUILD" && pwd)
counts="$B/python-counts"
if ! "$PY" -m pip --version >/dev/null 2>&1; then
    echo "python-check: SKIPPED: no pip for $PY (apt-get install python3-pip)"
    echo "0 0 1" > "$counts"; exit 0
fi
echo "0 1 0" > "$counts"   # until pytest says otherwise
deps="$B/python-deps"
missing=""
for m in numpy scipy pytest; do
    PYTHONPATH="$deps" "$PY" -c "import $m" 2>/dev/null || missing="$missing $m"
done
if [ -n "$missing" ]; then
    echo "python-check: installing$missing into $deps"
    "$PY" -m pip install --quiet --target "$deps" $missing || exit 1
fi
# The integrations' engines (test_milvus.py, test_ray.py, test_parquet.py): installed when missing,
# their tests skip visibly when the install fails (offline).
optional=""
for m in pyarrow:pyarrow pymilvus:pymilvus milvus_lite:milvus-lite ray:ray[data]; do
    PYTHONPATH="$deps" "$PY" -c "import ${m%%:*}" 2>/dev/null || optional="$optional ${m#*:}"
done
if [ -n "$optional" ]; then
    echo "python-check: installing$optional into $deps (optional: their tests skip without them)"
    "$PY" -m pip install --quiet --target "$deps" $optional ||
        echo "python-check: could not install$optional (offline?): the Milvus / Ray / Parquet tests will skip"
fi
# The package as a user installs it (pip install ./python), bundling the library under test.
pkg="$B/python-pkg"
rm -rf "$pkg"
isolation=""
"$PY" -c "import setuptools, wheel" 2>/dev/null && isolation="--no-build-isolation"  # offline when possible
SPLADE_LIB="$B/libsplade.so.0" "$PY" -m pip install --quiet --no-deps $isolation \
    --target "$pkg" "$ROOT/python" || exit 1
log="$B/python-pytest.log"
cd "$ROOT" && SPLADE_LIB="$B/libsplade.so.0" SPLADE_CLI="$B/splade-index" SPLADE_INSTALLED="$pkg" \
    PYTHONPATH="$pkg:$deps" "$PY" -m pytest -q -rs -p no:cacheprovider python/tests >"$log" 2>&1
prc=$?
cat "$log"
n() { tail -n 1 "$log" | grep -oE "[0-9]+ $1" | grep -oE "[0-9]+" || echo 0; }
p=$(n passed); f=$(( $(n failed) + $(n error) )); s=$(n skipped)
[ $prc -ne 0 ] && [ "$f" -eq 0 ] && f=1   # exit 5 (no test collected), a crash, an internal error
echo "$p $f $s" > "$counts"
echo "python: $p passed, $f failed, $s skipped"
[ $prc -eq 0 ]
