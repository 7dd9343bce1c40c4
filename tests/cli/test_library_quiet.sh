#!/bin/sh
# Library code (src/ outside src/cli/) never prints, never exits and reads no environment variable:
# diagnostics go to the log callback (splade_set_log), progress to the operation's callback,
# user-facing settings come as options (the CLI maps the environment in src/cli/cli_env.c), and
# the kernels' tuning knobs are read in one file, src/common/settings.c. This test greps for the
# calls that would break that and names each offending line.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
calls='getenv|secure_getenv|printf|vprintf|fprintf|vfprintf|dprintf|puts|fputs|putchar|perror|exit|_exit|_Exit|quick_exit|abort|system'
bad=$(grep -rnE "(^|[^[:alnum:]_.>])($calls)[[:space:]]*\\(|(^|[^[:alnum:]_])(stdout|stderr)([^[:alnum:]_]|\$)" src \
        --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' |
      grep -v '^src/cli/' | grep -v '^src/common/settings\.c:')
if [ -n "$bad" ]; then
    echo "FAIL: library code prints, exits or reads the environment (use splade_log, a progress"
    echo "callback, an option, or src/common/settings.c for a kernel knob):"
    printf "%s\n" "$bad"
    exit 1
fi
# the settings file is the only reader, and every knob it reads is in the documented table
for v in $(grep -oE 'SPLADE_[A-Z0-9_]+' src/common/settings.c | sort -u); do
    grep -q "^| \`$v\`" docs/CONTRIBUTING.md || { echo "FAIL: $v (src/common/settings.c) is not in docs/CONTRIBUTING.md's Settings table"; exit 1; }
done
echo "ok: no printing, exiting or getenv in library code outside src/common/settings.c; its knobs documented"
