#!/bin/sh
# splade-index fetch-model against a local HTTP server on 127.0.0.1 (free port; killed on exit):
# a full download through a redirect, resume of a truncated .part with a Range request, an
# optional file's 404 tolerated, a required file's 404 reported, an unreachable endpoint.
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
command -v python3 > /dev/null || { echo "SKIP: python3 needed for the test server"; exit 77; }
MODEL=$ROOT/cache/rand-h96
[ -f "$MODEL/model.safetensors" ] || { echo "SKIP: no model at $MODEL (run make models)"; exit 77; }
T=$(mktemp -d /tmp/splade_cli_fetchXXXXXX)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; [ -f "$T/server.log" ] && cat "$T/server.log"; exit 1; }

# Hub layout: /org/tiny/resolve/main/FILE. model.safetensors redirects to /cdn/ (as the hub's
# CDN does); /org/novocab lacks vocab.txt. Range requests are answered 206; every request and
# its Range header is logged.
mkdir -p "$T/hub/org/tiny" "$T/hub/org/novocab"
cp "$MODEL/config.json" "$MODEL/vocab.txt" "$MODEL/model.safetensors" "$T/hub/org/tiny/"
cp "$MODEL/config.json" "$MODEL/model.safetensors" "$T/hub/org/novocab/"
cat > "$T/server.py" << 'PY'
import http.server, os, re, sys
root = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, fmt, *a):
        print(self.path, self.headers.get("Range"), fmt % a, file=sys.stderr, flush=True)
    def do_GET(self):
        m = re.match(r"^/([^/]+)/([^/]+)/resolve/main/([^/]+)$", self.path)
        if m and m.group(3) == "model.safetensors":
            self.send_response(302)
            self.send_header("Location", "/cdn/%s/%s/%s" % m.groups())
            self.end_headers()
            return
        c = re.match(r"^/cdn/([^/]+)/([^/]+)/([^/]+)$", self.path)
        path = os.path.join(root, *(m or c).groups()) if (m or c) else None
        if not path or not os.path.isfile(path):
            self.send_error(404)
            return
        data = open(path, "rb").read()
        start, r = 0, self.headers.get("Range")
        if r:
            start = int(re.match(r"bytes=(\d+)-", r).group(1))
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        self.wfile.write(data[start:])
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[2], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
timeout 120 python3 "$T/server.py" "$T/hub" "$T/port" 2> "$T/server.log" &
PID=$!
i=0; while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$T/port" ] || fail "test server did not start"
export SPLADE_HF_ENDPOINT="http://127.0.0.1:$(cat "$T/port")"
export SPLADE_CACHE="$T/cache"

# 1. Full download into the cache; tokenizer_config.json is absent on the server (404: fine).
"$BIN" fetch-model org/tiny > "$T/out" 2> "$T/err" || fail "fetch: $(cat "$T/err")"
D=$T/cache/org/tiny
cmp -s "$D/model.safetensors" "$MODEL/model.safetensors" || fail "model.safetensors differs"
cmp -s "$D/vocab.txt" "$MODEL/vocab.txt" || fail "vocab.txt differs"
[ ! -e "$D/tokenizer_config.json" ] && [ ! -e "$D/tokenizer_config.json.part" ] || fail "404 file left behind"
grep -q "fingerprint" "$T/out" || fail "summary: $(cat "$T/out")"
"$BIN" encode --model org/tiny --device cpu --quiet "cells" > /dev/null || fail "--model ORG/NAME from the cache"

# 2. Resume: a truncated .part continues with a Range request.
mkdir -p "$T/dest"
cp "$D/config.json" "$D/vocab.txt" "$T/dest/"
head -c 1000000 "$MODEL/model.safetensors" > "$T/dest/model.safetensors.part"
"$BIN" fetch-model org/tiny --dest "$T/dest" --quiet 2> "$T/err" || fail "resume: $(cat "$T/err")"
cmp -s "$T/dest/model.safetensors" "$MODEL/model.safetensors" || fail "resumed file differs"
[ ! -e "$T/dest/model.safetensors.part" ] || fail ".part left after completion"
grep -q "/cdn/org/tiny/model.safetensors bytes=1000000-" "$T/server.log" || fail "no Range request"

# 3. Complete files are not fetched again.
gets() { grep -c '"GET [^ ]*/\(config.json\|vocab.txt\|model.safetensors\) ' "$T/server.log"; }
n=$(gets)
"$BIN" fetch-model org/tiny --dest "$T/dest" --quiet || fail "refetch"
[ "$(gets)" -eq "$n" ] || fail "complete files downloaded again"

# 4. A required file missing: 404 named, exit 1.
"$BIN" fetch-model org/novocab --dest "$T/nv" --quiet > /dev/null 2> "$T/err"
[ $? -eq 1 ] || fail "404 of vocab.txt: exit status"
grep -q "vocab.txt: HTTP 404" "$T/err" || fail "404 message: $(cat "$T/err")"

# 5. Unreachable endpoint (closed port) and bad names.
kill "$PID"; wait "$PID" 2>/dev/null; PID=
SPLADE_HF_ENDPOINT=http://127.0.0.1:1 "$BIN" fetch-model org/other --dest "$T/off" > /dev/null 2> "$T/err"
[ $? -eq 1 ] || fail "offline: exit status"
grep -q "network error: .*offline?" "$T/err" || fail "offline message: $(cat "$T/err")"
"$BIN" fetch-model "../etc" > /dev/null 2>&1; [ $? -eq 1 ] || fail "bad name accepted"
"$BIN" fetch-model > /dev/null 2>&1; [ $? -eq 2 ] || fail "no name: exit status not 2"
echo "ok"
