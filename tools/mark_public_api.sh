#!/bin/sh
# Marks every function declared in include/ as exported from libsplade.so (SPLADE_API, defined in
# include/splade.h; everything else is built -fvisibility=hidden) and makes each header include
# splade.h for the macro. Idempotent: re-run it after adding declarations or headers.
# A declaration is a line at column 0 that starts with a return type followed by `splade_name(`
# (typedefs, static inline functions, preprocessor and indented lines are left alone); its
# continuation lines move right by the macro's width so that they stay aligned.
set -eu
cd "$(dirname "$0")/.."
for h in include/splade.h include/splade/*.h; do
    awk '
        cont && /^[ \t]/ && !/^#/ { $0 = "           " $0; if (/;/) cont = 0; print; next }
        { cont = 0 }
        !/^(SPLADE_API|typedef|static|#|[ \t])/ && /^[A-Za-z_][A-Za-z_0-9 *]*[ *]splade_[a-z0-9_]+\(/ {
            $0 = "SPLADE_API " $0; cont = !/;/
        }
        { print }' "$h" > "$h.tmp" && mv "$h.tmp" "$h"
    [ "$h" = include/splade.h ] && continue
    grep -q '^#include "splade.h"' "$h" ||
        sed -i '0,/^#define SPLADE_[A-Z0-9_]*_H$/s//&\n\n#include "splade.h"/' "$h"
done
