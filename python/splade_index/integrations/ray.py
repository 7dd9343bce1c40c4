"""Corpus encoding spread over a Ray cluster, writing vector shards that `splade-index build --vectors`
and `add --vectors` take as they are (the JSONL `splade-index encode` prints).

    import ray
    from splade_index.integrations.ray import plan_chunks, EncodeChunks
    ray.init()
    plan = ray.data.from_items(plan_chunks("corpus.jsonl"))          # 256-record chunks, by byte range
    done = plan.map_batches(EncodeChunks, batch_size=1, concurrency=2,
                            fn_constructor_kwargs={"out_dir": "/shared/vectors", "device": "cpu"})
    done.materialize()                                                # part-000000.jsonl, ...

examples/ray_encode.py is the whole pipeline. Identical vectors: the encoder sorts each call's texts
by length into batches, and a text's last bits can depend on its batch (include/splade/encoder.h), so
`splade-index encode` encodes its input 256 records at a time, in file order. plan_chunks cuts the
corpus at the same boundaries and each actor encodes one such chunk per call: the shards, read in
order, are byte for byte `splade-index encode --input CORPUS` (python/tests/test_ray.py).
EncodeBatch is the plain map_batches callable over rows of text (any Ray Data source); its batches are
Ray's, so its vectors match `encode` only up to those last bits.

One encoder per actor (the model is loaded once, in __init__): device "cpu" (threads: the actor's
CPUs) or "cuda" (give the actor num_gpus=1). Output folders must be visible to every node (a shared
file system) or be collected from each node afterwards."""
import json
import os
import time

import numpy as np

CHUNK = 256  # SPLADE_ENCODE_CHUNK: records per encoder call of `splade-index encode`


def _json_string(s):
    """A JSON string written as the CLI writes it (src/cli/cli_json.c): only '"', '\\' and bytes
    below 0x20 escaped, the latter as \\u00XX; other characters as they are (UTF-8)."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _weight(w):
    """The shortest of %.6g .. %.9g reading back to the same float32 (src/cli/cli_json.c)."""
    w = np.float32(w)
    for digits in range(6, 10):
        s = "%.*g" % (digits, float(w))
        if np.float32(float(s)) == w:
            return s
    return s


def vector_lines(ids, X, vocab):
    """`splade-index encode` lines for rows of X (csr_matrix, columns = vocab ids), one str per row."""
    lines = []
    for i, doc_id in enumerate(ids):
        a, b = X.indptr[i], X.indptr[i + 1]
        pairs = ", ".join(f"{_json_string(vocab[t])}: {_weight(w)}" for t, w in zip(X.indices[a:b], X.data[a:b]))
        lines.append(f'{{"id": {_json_string(doc_id)}, "vector": {{{pairs}}}}}\n')
    return lines


def _record(d, where):
    """(id, text) of a BEIR / Anserini record, joined as include/splade/corpus.h says."""
    rid = d.get("_id", d.get("id"))
    if rid is None or isinstance(rid, bool) or not isinstance(rid, (str, int)):
        raise ValueError(f"{where}: missing or non-string \"_id\"/\"id\"")
    body = d.get("text", d.get("contents"))
    if not isinstance(body, str):
        raise ValueError(f"{where}: missing or non-string field \"text\" or \"contents\"")
    title = d.get("title") or ""
    return str(rid), (f"{title} {body}" if title else body)


def plan_chunks(path, chunk=CHUNK):
    """Cuts a corpus into chunks of `chunk` records in file order: JSONL (byte ranges; blank lines
    skipped as the CLI skips them) or Parquet (row ranges; columns _id/id, title, text/contents).
    Returns [{"path", "format", "chunk", "start", "stop"}], one per chunk, for ray.data.from_items.
    Only JSONL line boundaries (or Parquet metadata) are read here, not the records."""
    path = os.path.abspath(path)
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq
        n = pq.ParquetFile(path).metadata.num_rows
        return [{"path": path, "format": "parquet", "chunk": k, "start": s, "stop": min(s + chunk, n)}
                for k, s in enumerate(range(0, n, chunk))]
    plan, start, count, pos = [], 0, 0, 0
    with open(path, "rb") as f:
        for line in f:
            pos += len(line)
            if line.strip():
                count += 1
                if count == chunk:
                    plan.append({"path": path, "format": "jsonl", "chunk": len(plan), "start": start, "stop": pos})
                    start, count = pos, 0
    if count:
        plan.append({"path": path, "format": "jsonl", "chunk": len(plan), "start": start, "stop": pos})
    return plan


def read_chunk(item):
    """(ids, texts) of one plan_chunks item."""
    if item["format"] == "parquet":
        import pyarrow.parquet as pq
        t = pq.read_table(item["path"]).slice(item["start"], item["stop"] - item["start"])
        rows = t.to_pylist()
        return tuple(map(list, zip(*(_record(r, f"{item['path']} row {item['start'] + i}")
                                     for i, r in enumerate(rows))))) if rows else ([], [])
    ids, texts = [], []
    with open(item["path"], "rb") as f:
        f.seek(item["start"])
        data = f.read(item["stop"] - item["start"])
    for line in data.decode("utf-8").split("\n"):
        if line.strip():
            i, t = _record(json.loads(line), f"{item['path']} chunk {item['chunk']}")
            ids.append(i)
            texts.append(t)
    return ids, texts


class EncodeBatch:
    """map_batches callable: rows with an id column and a text column (and an optional title column,
    joined as the CLI joins it) -> rows {"id", "vector"} where vector is the `encode` JSON line.
    One Encoder per actor; encoder options as splade_index.Encoder takes them."""

    def __init__(self, model=None, device="cpu", threads=None, precision=None, max_length=256, batch_size=None,
                 id_column="_id", text_column="text", title_column="title"):
        from splade_index import Encoder
        self.enc = Encoder(model, device=device, precision=precision, threads=threads, max_length=max_length,
                           batch_size=batch_size)
        self.cols = (id_column, text_column, title_column)

    def encode(self, ids, texts):
        return vector_lines(ids, self.enc.encode(texts, chunk=CHUNK), self.enc.vocab)

    def __call__(self, batch):
        idc, textc, titlec = self.cols
        ids = [str(x) for x in batch[idc]]
        titles = batch[titlec] if titlec in batch else [""] * len(ids)
        texts = [f"{ti} {tx}" if ti else str(tx) for ti, tx in zip(titles, batch[textc])]
        return {"id": np.array(ids, dtype=object), "vector": np.array(self.encode(ids, texts), dtype=object)}


class EncodeChunks(EncodeBatch):
    """map_batches callable over plan_chunks rows: reads each chunk, encodes it in one call (the
    grouping of `splade-index encode`), writes out_dir/part-<chunk>.jsonl (temporary name, then
    rename: a shard is whole or absent) and returns {"chunk", "path", "n", "pid", "cpu_s"} per chunk
    (cpu_s: the actor process's CPU seconds so far, model loading included: the cost accounting of
    bench/export_bench.sh)."""

    def __init__(self, out_dir, **encoder_opts):
        super().__init__(**encoder_opts)
        self.out_dir = out_dir
        os.makedirs(out_dir, exist_ok=True)

    def __call__(self, batch):
        out = {"chunk": [], "path": [], "n": [], "pid": [], "cpu_s": []}
        keys = list(batch)
        for j in range(len(batch["chunk"])):
            item = {k: batch[k][j] for k in keys}
            item["chunk"], item["start"], item["stop"] = int(item["chunk"]), int(item["start"]), int(item["stop"])
            ids, texts = read_chunk(item)
            lines = self.encode(ids, texts) if ids else []
            dest = os.path.join(self.out_dir, f"part-{item['chunk']:06d}.jsonl")
            tmp = f"{dest}.tmp-{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as f:
                f.writelines(lines)
            os.replace(tmp, dest)
            out["chunk"].append(item["chunk"])
            out["path"].append(dest)
            out["n"].append(len(lines))
            out["pid"].append(os.getpid())
            out["cpu_s"].append(time.process_time())
        return {"chunk": np.array(out["chunk"]), "path": np.array(out["path"], dtype=object),
                "n": np.array(out["n"]), "pid": np.array(out["pid"]), "cpu_s": np.array(out["cpu_s"])}
