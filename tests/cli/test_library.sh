#!/bin/sh
# libsplade as a library: libsplade.so.0 exports only splade_* names and every function declared in
# include/ (SPLADE_API), the CLI is linked against it and is not part of libsplade.a, user CFLAGS do
# not drop the build's own flags, and `make install DESTDIR=` gives headers, libraries and a
# splade.pc with which examples/search.c compiles, links (shared and static) and answers a query.
set -u
BUILD=${BUILD:-build}
ROOT=$(pwd)
SO=$BUILD/libsplade.so.0
[ -f "$SO" ] && [ -x "$BUILD/splade-index" ] || { echo "missing $SO or $BUILD/splade-index"; exit 1; }
T=$(mktemp -d /tmp/splade_cli_libXXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Our own make runs below get their settings from the command line, not from a calling make.
unset MAKEFLAGS MFLAGS MAKELEVEL
# The build's kind, read off the build itself: CUDA (libsplade-cuda.so beside), sanitizers.
CUDA_SO=$BUILD/libsplade-cuda.so
NO_CUDA=1; [ -f "$CUDA_SO" ] && NO_CUDA=0
SAN=; SANFLAGS=; readelf -d "$SO" | grep -q 'libasan' && SAN=1 SANFLAGS="-fsanitize=address,undefined"
VERSION=$(sed -n 's/^#define SPLADE_VERSION "\(.*\)"/\1/p' include/splade.h)

# Exports: only splade_ names, and all that include/ declares.
nm -D --defined-only "$SO" | awk '{print $NF}' | sort > "$T/exported"
[ -s "$T/exported" ] || fail "nothing exported from $SO"
grep -v '^splade_' "$T/exported" > "$T/stray" && fail "$SO exports names without the splade_ prefix: $(head -20 "$T/stray" | tr '\n' ' ')"
sed -n 's/^SPLADE_API [^(]*[ *]\(splade_[a-z0-9_]*\)(.*/\1/p' include/splade.h include/splade/*.h | sort -u > "$T/declared"
[ "$(wc -l < "$T/declared")" -gt 50 ] || fail "few SPLADE_API declarations found in include/"
comm -23 "$T/declared" "$T/exported" > "$T/unexported"
[ -s "$T/unexported" ] && fail "declared in include/ but not exported: $(tr '\n' ' ' < "$T/unexported")"
# Exported beyond include/: only the internal functions that libsplade-cuda.so and the CLI call back
# into (declared SPLADE_API in src/common/fail.h, src/gpu/loader.h, src/common/settings.h). The GPU
# entry points (src/gpu/gpu_entry.h) are exported from libsplade-cuda.so, not from here.
printf '%s\n' splade_fail splade_gpu_symbol splade_settings_get splade_phase_add | sort > "$T/internal_ok"
comm -23 "$T/exported" "$T/declared" | comm -23 - "$T/internal_ok" > "$T/extra"
[ -s "$T/extra" ] && fail "$SO exports functions that include/ does not declare: $(tr '\n' ' ' < "$T/extra")"
# The public headers stand alone: each compiles by itself with only include/ on the path, as C11
# (-pedantic) and as C++; none pulls in a dependency's header (jansson, CUDA, ...).
for h in include/splade.h include/splade/*.h; do
    rel=${h#include/}
    printf '#include "%s"\n#include "%s"\nint splade_header_check;\n' "$rel" "$rel" > "$T/hdr.c"
    cc -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only -Iinclude "$T/hdr.c" 2> "$T/hdr.err" ||
        fail "$h does not compile alone: $(head -3 "$T/hdr.err")"
    if command -v c++ > /dev/null; then
        cp "$T/hdr.c" "$T/hdr.cc"
        c++ -std=c++17 -Wall -Werror -fsyntax-only -Iinclude "$T/hdr.cc" 2> "$T/hdr.err" || fail "$h as C++: $(head -3 "$T/hdr.err")"
    fi
    grep -E '^#include <' "$h" | grep -vE '<(stddef|stdint|stdbool|stdio)\.h>' && fail "$h includes a non-libc header"
done
# splade_model is opaque: its size is unknown to callers, who use the accessors.
printf '#include "splade/model.h"\nunsigned long s = sizeof(splade_model);\n' > "$T/opaque.c"
cc -std=c11 -fsyntax-only -Iinclude "$T/opaque.c" 2> /dev/null && fail "splade_model is not opaque in include/splade/model.h"
readelf -d "$SO" | grep -q 'Library soname: \[libsplade.so.0\]' || fail "soname of $SO"
# libsplade.so.0 links no CUDA library (the GPU code is loaded on first use: test_lazy_cuda.sh).
readelf -d "$SO" | grep -E 'NEEDED.*(cuda|cublas)' && fail "$SO links CUDA libraries"
if [ $NO_CUDA = 0 ]; then
    # libsplade-cuda.so: only splade_ names too (the static CUDA runtime's stay hidden), among them
    # every entry point that src/gpu/cuda_loader.c looks up, and its calls back into the host
    # (splade_fail & co.) are all exported by libsplade.so.0.
    nm -D --defined-only "$CUDA_SO" | awk '{print $NF}' | sort > "$T/cuda_exported"
    grep -v '^splade_' "$T/cuda_exported" > "$T/stray" &&
        fail "$CUDA_SO exports names without the splade_ prefix: $(head -20 "$T/stray" | tr '\n' ' ')"
    { sed -n 's/^ *X(\(splade_[a-z0-9_]*\)).*/\1/p' src/gpu/cuda_loader.c
      sed -n 's/^#define SPLADE_BENCH_LMHEAD_GPU "\(.*\)"/\1/p' src/lmhead_fused/lmhead_bench.h; } | sort -u > "$T/looked_up"
    [ "$(wc -l < "$T/looked_up")" -gt 5 ] || fail "few entry points found in src/gpu/cuda_loader.c"
    comm -23 "$T/looked_up" "$T/cuda_exported" > "$T/missing"
    [ -s "$T/missing" ] && fail "$CUDA_SO lacks entry points the loader looks up: $(tr '\n' ' ' < "$T/missing")"
    nm -D --undefined-only "$CUDA_SO" | awk '{print $NF}' | grep '^splade_' | sort > "$T/host_calls"
    comm -23 "$T/host_calls" "$T/exported" > "$T/missing"
    [ -s "$T/missing" ] && fail "$CUDA_SO calls host functions that $SO does not export: $(tr '\n' ' ' < "$T/missing")"
fi
[ "$(readlink "$BUILD/libsplade.so")" = libsplade.so.0 ] || fail "libsplade.so symlink"

# The CLI is a client: it needs libsplade.so.0 and libsplade.a holds none of its cmd_* functions.
readelf -d "$BUILD/splade-index" | grep -q 'NEEDED.*\[libsplade.so.0\]' || fail "splade-index does not link libsplade.so.0"
nm -g --defined-only "$BUILD/libsplade.a" 2>/dev/null | grep -q ' cmd_' && fail "libsplade.a contains the CLI's cmd_* functions"

# make CFLAGS=-O3 keeps -std=c11, -Iinclude and the pkg-config flags (it used to drop them and fail):
# two objects stand for the build (one needs cblas.h from OpenBLAS's pkg-config include path).
# (the package check is the main build's business: a GPU image builds against a carried sysroot
# without the Debian packages, as bench/gpu.sh does, so mark it done here)
mkdir -p "$T/o3" && touch "$T/o3/.deps-ok"
make -s NO_CUDA=1 BUILD="$T/o3" CFLAGS=-O3 "$T/o3/obj/src/encoder/gemm_cpu.o" "$T/o3/obj/src/cli/main.o" \
    > "$T/o3.log" 2>&1 || fail "make CFLAGS=-O3: $(tail -5 "$T/o3.log")"
make -n NO_CUDA=1 BUILD="$T/o3" CFLAGS=-O3 "$T/o3/obj/src/common/status.o" |
    grep -q -- '-std=c11 .*-Iinclude .*-fvisibility=hidden .*-O3' || fail "make CFLAGS=-O3 compile line lacks our flags"

# Install into a staging folder (everything is built already: install only copies).
make -s NO_CUDA=$NO_CUDA SAN=$SAN BUILD="$BUILD" DESTDIR="$T/dest" PREFIX=/usr/local install > "$T/install.log" 2>&1 ||
    fail "make install DESTDIR=: $(tail -5 "$T/install.log")"
D=$T/dest/usr/local
for f in include/splade.h include/splade/index.h lib/libsplade.so.0 lib/libsplade.so lib/libsplade.a \
         lib/pkgconfig/splade.pc bin/splade-index; do
    [ -e "$D/$f" ] || fail "not installed: $f"
done
[ $NO_CUDA = 1 ] || [ -e "$D/lib/libsplade-cuda.so" ] || fail "not installed: lib/libsplade-cuda.so"
[ "$(readlink "$D/lib/libsplade.so.0")" = "$(basename "$(readlink -f "$SO")")" ] || fail "installed soname symlink"
grep -qx 'prefix=/usr/local' "$D/lib/pkgconfig/splade.pc" || fail "splade.pc prefix: $(cat "$D/lib/pkgconfig/splade.pc")"
"$D/bin/splade-index" --version | grep -qx "splade-index $VERSION" || fail "installed CLI does not run from its own ../lib"

# Installed where pkg-config's paths are real, for the example (LDCONFIG=true: no system ld.so cache update).
P=$T/usr
make -s NO_CUDA=$NO_CUDA SAN=$SAN BUILD="$BUILD" PREFIX="$P" LDCONFIG=true install > "$T/install.log" 2>&1 ||
    fail "make install PREFIX=: $(tail -5 "$T/install.log")"
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
flags=$(pkg-config --cflags --libs splade) || fail "pkg-config --cflags --libs splade"
echo "$flags" | grep -q -- "-I$P/include" && echo "$flags" | grep -q -- "-L$P/lib -lsplade" || fail "pkg-config flags: $flags"
[ "$(pkg-config --modversion splade)" = "$VERSION" ] || fail "pkg-config --modversion splade"
cd "$T" || exit 1
cc $SANFLAGS -Wall -Wextra -Werror "$ROOT/examples/search.c" $flags -o search_shared ||
    fail "examples/search.c against the installed library"
# Static: libsplade.a with splade.pc's Libs.private and its Requires.private packages' own flags
# (not `pkg-config --static`, which would also want libcurl's static dependencies' -dev packages).
static="-L$P/lib -l:libsplade.a $(sed -n 's/^Libs.private: //p' "$P/lib/pkgconfig/splade.pc")
        $(pkg-config --libs $(pkg-config --print-requires-private splade))"
cc $SANFLAGS "$ROOT/examples/search.c" $(pkg-config --cflags splade) $static -o search_static ||
    fail "examples/search.c static link: $static"
readelf -d search_static | grep -q 'libsplade' && fail "search_static still needs libsplade.so"

cat > v.jsonl <<'J'
{"id": "d1", "vector": {"cat": 1.5, "dog": 0.5}}
{"id": "d2", "vector": {"dog": 2.0, "bone": 1.0}}
{"id": "d3", "vector": {"fish": 3}}
J
for prog in search_shared search_static; do
    LD_LIBRARY_PATH="$P/lib" ./$prog v.jsonl "idx-$prog" dog:1.0 cat:0.1 unknown:2 > "$prog.out" 2> "$prog.err" ||
        fail "$prog: $(cat "$prog.err")"
    [ "$(cut -f1,2 "$prog.out" | tr '\t\n' ' ')" = "libsplade $VERSION 1 d2 2 d1 " ] ||
        fail "$prog output: $(cat "$prog.out")"
done
# The shared one really loads the installed library.
LD_LIBRARY_PATH="$P/lib" LD_DEBUG=libs ./search_shared v.jsonl idx-x dog:1 2>&1 >/dev/null |
    grep -q "$P/lib/libsplade.so.0" || fail "search_shared did not load $P/lib/libsplade.so.0"
# Errors come back as a status with the detail naming the file and line.
echo '{"id": "d9", "vector": ' > bad.jsonl
LD_LIBRARY_PATH="$P/lib" ./search_shared bad.jsonl idx-bad dog:1 > /dev/null 2> bad.err && fail "bad vectors accepted"
grep -q 'bad.jsonl:1' bad.err || fail "error detail: $(cat bad.err)"
echo "ok: exports, CLI linkage, CFLAGS=-O3, install, pkg-config, examples/search.c (shared and static)"
