#!/bin/sh
# Runs a device script past one `run` call's 10-minute limit (the machine keeps its /tmp while warm,
# and stays warm for ~30 s between calls): the first call starts it detached, every call waits up to
# WAIT seconds (default 540) and copies its output folder back into $OUT.
#   sh bench/device_bg.sh start "ENV=... sh bench/gpu.sh"   # first call: start, then wait
#   sh bench/device_bg.sh wait                              # later calls: wait again
# The script's own $OUT is /tmp/device-bg/out; its stdout+stderr go to /tmp/device-bg/console.log.
set -u
D=/tmp/device-bg
if [ "$1" = start ]; then
    rm -rf $D && mkdir -p $D/out
    (OUT=$D/out setsid sh -c "$2; echo \$? >$D/rc" >$D/console.log 2>&1 &)
fi
end=$(( $(date +%s) + ${WAIT:-540} ))
while [ ! -f $D/rc ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
mkdir -p "${OUT:-/tmp/out}"
tar czf "${OUT:-/tmp/out}/bg-out.tgz" -C $D out console.log 2>/dev/null
tail -c 6000 $D/console.log
if [ -f $D/rc ]; then echo "[device_bg] finished, rc $(cat $D/rc)"; exit "$(cat $D/rc)"; fi
echo "[device_bg] still running"; exit 0
