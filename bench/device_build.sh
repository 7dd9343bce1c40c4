#!/bin/sh
# Sourced by the device scripts (bench/gpu.sh, bench/realistic_1m.sh): sets MK_CC / MK_LD and
# mk() (make with BUILD=$BUILD) so that the project builds on the GPU image. Needs BUILD and say().
# Kept in one place so every device script builds the same way.
# The device image may lack the Debian -dev packages the Makefile wants (and has no network
# for apt): then build against the carried .gpu/lm-sysroot.tar.gz (headers + shared libs of
# cmocka, jansson, utf8proc, streamvbyte, openblas, zlib; libcurl comes from the system). The
# Makefile finds the libraries through pkg-config when it can, else by their plain -l names, which
# the -L paths below then resolve (the image may have no pkg-config, or no .pc files).
MK_CC=""; MK_LD=""
missing=""
for h in cmocka.h jansson.h utf8proc.h streamvbyte.h zlib.h x86_64-linux-gnu/openblas-pthread/cblas.h; do
    [ -f "/usr/include/$h" ] || missing="$missing $h"
done
[ -n "$(ls /usr/lib/x86_64-linux-gnu/libcurl.so 2>/dev/null)" ] || missing="$missing libcurl.so"
if [ -n "$missing" ]; then
    if [ -f .gpu/lm-sysroot.tar.gz ]; then
        SR=/opt/lm-sysroot; mkdir -p $SR && tar xzf .gpu/lm-sysroot.tar.gz -C $SR
        L=$SR/usr/lib/x86_64-linux-gnu
        MK_CC="gcc -isystem $SR/usr/include -isystem $SR/usr/include/x86_64-linux-gnu/openblas-pthread"
        MK_LD="-pthread -L$L -L$L/openblas-pthread -Wl,-rpath,$L:$L/openblas-pthread"
        export LD_LIBRARY_PATH="$L:$L/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        mkdir -p $BUILD && touch $BUILD/.deps-ok
        say "system lacks:$missing -> using carried sysroot $SR"
    else
        say "system lacks:$missing and no .gpu/lm-sysroot.tar.gz was carried"
    fi
else
    # every header is here: the Makefile's dpkg check (which names missing -dev packages and stops)
    # has nothing to add on an image that got them some other way, and apt has no network here
    mkdir -p $BUILD && touch $BUILD/.deps-ok
fi
mk() { if [ -n "$MK_CC" ]; then make BUILD=$BUILD CC="$MK_CC" LDFLAGS="$MK_LD" "$@"; else make BUILD=$BUILD "$@"; fi; }
