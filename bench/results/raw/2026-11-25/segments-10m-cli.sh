#!/bin/sh
# issue #12: 10 M x ~120 postings through the CLI, --memory 4G, from a pipe
set -u
cd /work/big
echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) commit $(git -C /work/main rev-parse --short HEAD)"
rm -rf ix10m
( while sleep 20; do p=$(pgrep -f "splade-index build --vectors -" | head -1); [ -n "$p" ] && grep -E "VmRSS|RssAnon|RssFile" /proc/$p/status | tr -s ' ' | tr '\n' ' ' && echo " $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"; done ) > rss.log 2>&1 &
S=$!
bin/bench_index --docs 10000000 --write-docs - | nice -n 5 /usr/bin/time -v bin/splade-index build --vectors - -o ix10m --memory 4G --doc-scale 0.0118 --threads 2
echo "rc=$? end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
kill $S
bin/splade-index info -i ix10m
