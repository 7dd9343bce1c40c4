#!/bin/sh
# fetch-model for the layouts of issue 15, against a local HTTP server (hub URL layout
# /ORG/NAME/resolve/main/PATH, any depth; 404 otherwise): a sentence-transformers folder (MLM at
# the root + 1_SpladePooling), a Router folder (query_0_SparseStaticEmbedding, document_0_MLMTransformer,
# document_1_SpladePooling) and a plain folder with idf.json. Each fetched folder loads and gives
# the same vectors and fingerprint as the original; a module type fetch-model does not know is
# an error naming it. Random-weight models of make models (skipped, exit 77, when absent).
set -u
ROOT=$(pwd)
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
command -v python3 > /dev/null || { echo "SKIP: python3 needed for the test server"; exit 77; }
for m in rand-distilbert rand-docv3 rand-docv2-idf; do
    [ -d "$ROOT/cache/$m" ] || { echo "SKIP: no cache/$m (run make models)"; exit 77; }
done
T=$(mktemp -d /tmp/splade_cli_fetchstXXXXXX)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; [ -f "$T/server.log" ] && tail -20 "$T/server.log"; exit 1; }

mkdir -p "$T/hub/org"
for m in rand-distilbert rand-docv3 rand-docv2-idf; do cp -r "$ROOT/cache/$m" "$T/hub/org/$m"; done
cp -r "$ROOT/cache/rand-distilbert" "$T/hub/org/badtype"
python3 -c "import json; p='$T/hub/org/badtype/modules.json'; d=json.load(open(p)); d[1]['type']='x.Dense'; json.dump(d, open(p, 'w'))"
# a plain folder that ships tokenizer.json instead of vocab.txt (what transformers 5 saves)
cp -r "$ROOT/cache/rand-docv2-idf" "$T/hub/org/tjonly"
(cd "$T/hub/org/tjonly" && python3 -c "import json; t=open('vocab.txt',encoding='utf-8').read().split('\n')[:-1]; json.dump({'model': {'type': 'WordPiece', 'vocab': {w: i for i, w in enumerate(t)}}}, open('tokenizer.json', 'w'))" && rm vocab.txt)
cat > "$T/server.py" << 'PY'
import http.server, os, re, sys
root = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, fmt, *a):
        print(self.path, fmt % a, file=sys.stderr, flush=True)
    def do_GET(self):
        m = re.match(r"^/([^/]+)/([^/]+)/resolve/main/(.+)$", self.path)
        path = os.path.join(root, m.group(1), m.group(2), m.group(3)) if m and ".." not in self.path else None
        if not path or not os.path.isfile(path):
            self.send_error(404)
            return
        data = open(path, "rb").read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[2], "w").write(str(s.server_port))
s.serve_forever()
PY
timeout 120 python3 "$T/server.py" "$T/hub" "$T/port" 2> "$T/server.log" &
PID=$!
i=0; while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$T/port" ] || fail "test server did not start"
export SPLADE_HF_ENDPOINT="http://127.0.0.1:$(cat "$T/port")"
export SPLADE_CACHE="$T/cache"

for m in rand-distilbert rand-docv3 rand-docv2-idf; do
    "$BIN" fetch-model "org/$m" > "$T/$m.out" 2> "$T/err" || fail "fetch $m: $(cat "$T/err")"
    grep -q "fingerprint" "$T/$m.out" || fail "$m summary: $(cat "$T/$m.out")"
    "$BIN" encode --model "$T/cache/org/$m" --device cpu --quiet "cells divide" > "$T/$m.got" || fail "encode $m"
    "$BIN" encode --model "$ROOT/cache/$m" --device cpu --quiet "cells divide" > "$T/$m.want" || fail "encode orig $m"
    cmp -s "$T/$m.got" "$T/$m.want" || fail "$m: fetched folder encodes differently"
done
D=$T/cache/org/rand-docv3
for f in modules.json router_config.json query_0_SparseStaticEmbedding/model.safetensors \
         document_0_MLMTransformer/model.safetensors document_0_MLMTransformer/vocab.txt \
         document_1_SpladePooling/config.json; do
    cmp -s "$D/$f" "$ROOT/cache/rand-docv3/$f" || fail "router layout: $f missing or different"
done
[ -f "$T/cache/org/rand-distilbert/1_SpladePooling/config.json" ] || fail "1_SpladePooling not fetched"
cmp -s "$T/cache/org/rand-docv2-idf/idf.json" "$ROOT/cache/rand-docv2-idf/idf.json" || fail "idf.json not fetched"
# the fetched doc-only models build and query from their tables
"$BIN" build "$ROOT/data/example/corpus.jsonl" -o "$T/idx" --model org/rand-docv3 --device cpu --quiet || fail "build"
"$BIN" query -i "$T/idx" "earthquakes" -k 1 > /dev/null 2>&1 || fail "query"
"$BIN" fetch-model org/tjonly --quiet 2> "$T/err" || fail "fetch tokenizer.json-only: $(cat "$T/err")"
[ -f "$T/cache/org/tjonly/tokenizer.json" ] && [ ! -e "$T/cache/org/tjonly/vocab.txt" ] || fail "tokenizer.json not fetched"
"$BIN" encode --model org/tjonly --device cpu --quiet "cells divide" | cmp -s - "$T/rand-docv2-idf.want" \
    || fail "tokenizer.json-only folder encodes differently"
"$BIN" fetch-model org/badtype --dest "$T/bad" --quiet > /dev/null 2> "$T/err" && fail "unknown module type accepted"
grep -q 'module type "x.Dense" is not supported' "$T/err" || fail "message: $(cat "$T/err")"
echo "ok: fetch-model of sentence-transformers (plain, Router) and idf.json layouts"
