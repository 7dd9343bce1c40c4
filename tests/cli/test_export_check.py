"""Checks the output of `splade-index export` / `encode --queries --format` against each engine's
documented request shapes (called by tests/cli/test_export.sh). Sources of the shapes:

- OpenSearch _bulk: an action line {"index": {"_index", "_id"}} then the source line
  (docs.opensearch.org/latest/api-reference/document-apis/bulk/).
- OpenSearch rank_features: source {"<field>": {"<token>": <weight>}} and the query
  {"neural_sparse": {"<field>": {"query_tokens": {"<token>": <weight>}}}}
  (docs.opensearch.org, "Neural sparse search using raw vectors", "Neural sparse query").
- OpenSearch sparse_vector (3.3+): the same map with token ids as keys, positive float values; index
  setting index.sparse true and "method": {"name": "seismic"}; query parameters in
  "method_parameters" (docs.opensearch.org/latest/mappings/supported-field-types/sparse-vector/,
  "Neural sparse ANN search performance tuning"); keys other than integers fail with "Query tokens
  should be valid integer".
- Elasticsearch sparse_vector: {"<field>": {"<feature>": <weight>}}, strictly positive values, no
  dots in feature names before 8.16 (elastic/elasticsearch#93756, #111981), 9 significant bits kept;
  query {"sparse_vector": {"field", "query_vector"}} (elastic.co/guide/en/elasticsearch/reference/
  current/sparse-vector.html).
- Qdrant: PUT /collections/{name}/points {"points": [{"id": uint64 | UUID, "vector": {"<name>":
  {"indices": [...], "values": [...]}}, "payload": {...}}]}; query {"query": {"indices", "values"},
  "using": "<name>", "limit"} (api.qdrant.tech, "Upsert points", "Query points"); collection
  {"sparse_vectors": {"<name>": {...}}}.
- Milvus RESTful v2: {"collectionName", "data": [{..., "<field>": {"<index>": <value>}}]}
  (sparse JSON form of milvus-io/milvus#33231); search {"collectionName", "data", "annsField",
  "limit", "searchParams": {"metricType": "IP"}}.
"""
import json
import math
import re
import struct
import sys

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def vocab(path):
    with open(path, encoding="utf-8") as f:
        toks = f.read().split("\n")
    if toks and toks[-1] == "":
        toks.pop()
    return toks, {t: i for i, t in enumerate(toks)}


def feature(tok):
    return tok.replace(".", "__")


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def shortest_g(w):
    """The weight text the CLI writes (src/cli/cli_json.c): the shortest of %.6g .. %.9g that reads
    back to the same float32, each length printed by printf's rounding of the exact value."""
    for digits in range(6, 10):
        t = "%.*g" % (digits, w)
        if f32(float(t)) == w:
            return t
    return t


def check_weight_text(path):
    """Every number of a columns export is written as shortest_g writes its float32."""
    n = 0
    for line in open(path, encoding="utf-8"):
        m = re.search(r'"weights": \[([^\]]*)\]', line)
        for t in (m.group(1).split(", ") if m and m.group(1) else []):
            if t != shortest_g(f32(float(t))):
                fail(f"weight written {t}, expected {shortest_g(f32(float(t)))}")
            n += 1
    return n


def check_weights(ws, where):
    for w in ws:
        if not (isinstance(w, float) or isinstance(w, int)) or not math.isfinite(w) or w <= 0:
            fail(f"{where}: weight {w!r} is not a positive finite number")


def check_map(m, by_id, V, toks, where):
    if not isinstance(m, dict) or not m:
        fail(f"{where}: vector is not a non-empty object")
    feats = {feature(t) for t in toks}
    for k in m:
        if by_id:
            if not re.fullmatch(r"0|[1-9][0-9]*", k) or int(k) >= V:
                fail(f"{where}: key {k!r} is not a token id below {V}")
        else:
            if "." in k or k not in feats:
                fail(f"{where}: key {k!r} is not a vocabulary token (dots as __)")
    check_weights(m.values(), where)


def as_id_map(engine, m, tokmap):
    """A document's vector as {token id: weight} whatever the engine's keys."""
    if engine in ("opensearch-sparse", "milvus"):
        return {int(k): w for k, w in m.items()}
    inv = {feature(t): i for t, i in tokmap.items()}
    return {inv[k]: w for k, w in m.items()}


def read_docs(engine, path, toks, tokmap, bulk):
    """Validates the export; returns [(id, {term id: weight})] in output order."""
    V = len(toks)
    lines = [l for l in open(path, encoding="utf-8").read().split("\n") if l]
    out = []
    if engine in ("opensearch", "opensearch-sparse", "elasticsearch"):
        if len(lines) % 2:
            fail(f"{engine}: _bulk needs action/source pairs, got {len(lines)} lines")
        for i in range(0, len(lines), 2):
            a, s = json.loads(lines[i]), json.loads(lines[i + 1])
            if set(a) != {"index"} or set(a["index"]) != {"_index", "_id"} or not isinstance(a["index"]["_id"], str):
                fail(f"{engine}: bad bulk action {lines[i]}")
            if set(s) != {"splade"}:
                fail(f"{engine}: source has fields {sorted(s)}")
            check_map(s["splade"], engine == "opensearch-sparse", V, toks, f"{engine} line {i + 2}")
            out.append((a["index"]["_id"], as_id_map(engine, s["splade"], tokmap)))
    elif engine == "qdrant":
        for n, l in enumerate(lines, 1):
            body = json.loads(l)
            if set(body) != {"points"} or not 0 < len(body["points"]) <= bulk:
                fail(f"qdrant: body {n} is not {{points: [1..{bulk}]}}")
            if n < len(lines) and len(body["points"]) != bulk:
                fail(f"qdrant: body {n} holds {len(body['points'])} points, not --bulk-size {bulk}")
            for p in body["points"]:
                pid = p["id"]
                if isinstance(pid, int):
                    if not 0 <= pid < 2**64 or str(pid) != p["payload"]["id"]:
                        fail(f"qdrant: integer id {pid} for {p['payload']['id']!r}")
                elif not (isinstance(pid, str) and UUID.match(pid) and pid[14] == "8" and pid[19] in "89ab"):
                    fail(f"qdrant: id {pid!r} is neither an unsigned integer nor a version-8 UUID")
                sv = p["vector"]["splade"]
                if set(sv) != {"indices", "values"} or len(sv["indices"]) != len(sv["values"]) or not sv["indices"]:
                    fail(f"qdrant: sparse vector {sv}")
                if sv["indices"] != sorted(set(sv["indices"])) or not all(0 <= i < V for i in sv["indices"]):
                    fail(f"qdrant: indices not distinct ascending ids below {V}")
                check_weights(sv["values"], "qdrant")
                out.append((p["payload"]["id"], dict(zip(sv["indices"], sv["values"]))))
        ids = [json.loads(l)["points"] for l in lines]
        pids = [p["id"] for b in ids for p in b]
        if len(set(map(str, pids))) != len(pids):
            fail("qdrant: two documents got the same point id")
    elif engine == "milvus":
        for n, l in enumerate(lines, 1):
            body = json.loads(l)
            if set(body) != {"collectionName", "data"} or not 0 < len(body["data"]) <= bulk:
                fail(f"milvus: body {n} keys {sorted(body)}")
            for row in body["data"]:
                check_map(row["splade"], True, V, toks, "milvus")
                out.append((row["id"], {int(k): w for k, w in row["splade"].items()}))
    elif engine == "columns":
        for l in lines:
            r = json.loads(l)
            if set(r) != {"id", "term_ids", "weights"} or len(r["term_ids"]) != len(r["weights"]):
                fail(f"columns: {l[:80]}")
            if r["term_ids"] != sorted(set(r["term_ids"])):
                fail("columns: term ids not ascending")
            check_weights(r["weights"], "columns")
            out.append((r["id"], dict(zip(r["term_ids"], r["weights"]))))
    else:
        fail(f"unknown engine {engine}")
    return out


def check_queries(engine, path, toks, n_expected):
    V = len(toks)
    lines = [l for l in open(path, encoding="utf-8").read().split("\n") if l]
    if len(lines) != n_expected:
        fail(f"{engine} queries: {len(lines)} bodies for {n_expected} texts")
    vecs = []
    for l in lines:
        b = json.loads(l)
        if engine in ("opensearch", "opensearch-sparse"):
            ns = b["query"]["neural_sparse"]["splade"]
            check_map(ns["query_tokens"], engine == "opensearch-sparse", V, toks, engine)
            if engine == "opensearch-sparse" and ns.get("method_parameters", {}).get("k") != b["size"]:
                fail("opensearch-sparse: method_parameters.k")
            vecs.append(ns["query_tokens"])
        elif engine == "elasticsearch":
            q = b["query"]["sparse_vector"]
            if q["field"] != "splade":
                fail("elasticsearch: field")
            check_map(q["query_vector"], False, V, toks, engine)
            vecs.append(q["query_vector"])
        elif engine == "qdrant":
            if b["using"] != "splade" or not isinstance(b["limit"], int):
                fail("qdrant query: using/limit")
            q = b["query"]
            if len(q["indices"]) != len(q["values"]) or q["indices"] != sorted(set(q["indices"])):
                fail("qdrant query: indices")
            vecs.append(dict(zip(map(str, q["indices"]), q["values"])))
        elif engine == "milvus":
            if b["annsField"] != "splade" or b["searchParams"]["metricType"] != "IP" or len(b["data"]) != 1:
                fail("milvus query: annsField/metricType/data")
            check_map(b["data"][0], True, V, toks, engine)
            vecs.append(b["data"][0])
    return vecs


def check_mapping(engine, path):
    m = json.load(open(path, encoding="utf-8"))
    if engine == "opensearch":
        ok = m["mappings"]["properties"]["splade"]["type"] == "rank_features"
    elif engine == "opensearch-sparse":
        f = m["mappings"]["properties"]["splade"]
        ok = m["settings"]["index"]["sparse"] is True and f["type"] == "sparse_vector" and f["method"]["name"] == "seismic"
    elif engine == "elasticsearch":
        ok = m["mappings"]["properties"]["splade"]["type"] == "sparse_vector"
    elif engine == "qdrant":
        ok = "splade" in m["sparse_vectors"]
    elif engine == "milvus":
        types = {f["fieldName"]: f["dataType"] for f in m["schema"]["fields"]}
        ok = types == {"id": "VarChar", "splade": "SparseFloatVector"} and m["indexParams"][0]["metricType"] == "IP"
    else:
        ok = set(m) == {"id", "term_ids", "weights"}
    if not ok:
        fail(f"{engine} mapping: {m}")


def main():
    cmd = sys.argv[1]
    if cmd == "docs":  # docs ENGINE FILE VOCAB BULK REFERENCE.jsonl: same vectors as the reference columns
        engine, path, vpath, bulk, ref = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
        toks, tokmap = vocab(vpath)
        got = read_docs(engine, path, toks, tokmap, bulk)
        if engine == "columns":
            check_weight_text(path)
        want = read_docs("columns", ref, toks, tokmap, bulk)
        if got != want:
            fail(f"{engine}: vectors differ from the reference export (first: {got[:1]} vs {want[:1]})")
    elif cmd == "queries":  # queries ENGINE FILE VOCAB N
        check_queries(sys.argv[2], sys.argv[3], vocab(sys.argv[4])[0], int(sys.argv[5]))
    elif cmd == "mapping":
        check_mapping(sys.argv[2], sys.argv[3])
    elif cmd == "dequant":  # dequant INDEX_EXPORT VECTORS_EXPORT: |w_ix - w| <= doc_scale / 2 (or w_ix = doc_scale)
        a = read_docs("columns", sys.argv[2], *vocab(sys.argv[4]), 1)
        b = read_docs("columns", sys.argv[3], *vocab(sys.argv[4]), 1)
        scale = max(w for _, v in b for w in v.values()) / 255  # doc_scale: the largest weight / 255
        if [x[0] for x in a] != [x[0] for x in b]:
            fail("dequant: ids or order differ")
        for (i, va), (_, vb) in zip(a, b):
            if set(va) != set(vb):
                fail(f"dequant {i}: terms differ")
            for t, w in vb.items():
                err = abs(va[t] - w)
                if not (err <= scale / 2 * (1 + 1e-5) or (w < scale / 2 and abs(va[t] - scale) < 1e-6 * scale)):
                    fail(f"dequant {i} term {t}: {va[t]} vs {w} (doc_scale {scale})")
    elif cmd == "random":  # random N VOCAB OUT SEED: a random vectors file, tokens with dots and escapes included
        n, toks, out, seed = int(sys.argv[2]), vocab(sys.argv[3])[0], sys.argv[4], int(sys.argv[5])
        import random
        rng = random.Random(seed)
        with open(out, "w", encoding="utf-8") as f:
            for d in range(n):
                k = rng.randint(1, 40)
                terms = rng.sample(range(len(toks)), k)
                if d % 3 == 0:
                    terms[0] = toks.index(".")
                vec = {toks[t]: f32(rng.uniform(0.001, 5) * 10 ** rng.randint(-6, 6)) for t in set(terms)}
                f.write(json.dumps({"id": f"doc-{d}" if d % 2 else str(d * 7), "vector": vec}) + "\n")
    else:
        fail(f"unknown check {cmd}")


if __name__ == "__main__":
    main()
