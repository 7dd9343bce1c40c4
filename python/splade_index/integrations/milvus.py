"""Milvus for SPLADE vectors: a collection with a SPARSE_FLOAT_VECTOR field and its index, filled with
our encoder's vectors in batches, searched with our query encoder.

    from splade_index import Encoder
    from splade_index.integrations.milvus import MilvusSparse
    enc = Encoder("cache/splade-tiny", device="cpu")
    m = MilvusSparse("http://localhost:19530", "scifact", enc)   # or a file path: Milvus Lite
    m.create()
    m.insert_corpus("corpus.jsonl")
    hits = m.search(["what causes cancer"], k=10)                 # [[(doc id, score), ...]]

Milvus scores with the float32 weights as given (metric IP); splade-index quantizes documents and
queries to 8 bits (docs/FORMAT.md), so the two rankings agree up to that quantization
(python/tests/test_milvus.py measures it). pymilvus is imported here, not by splade_index.
"""
import json



def csr_rows(X):
    """Rows of a scipy.sparse csr_matrix as {term id: weight} dicts (Milvus's sparse row form)."""
    X = X.tocsr()
    out = []
    for i in range(X.shape[0]):
        a, b = X.indptr[i], X.indptr[i + 1]
        out.append({int(t): float(w) for t, w in zip(X.indices[a:b], X.data[a:b])})
    return out


def read_corpus(path):
    """(ids, texts) of a BEIR / Anserini JSONL corpus, texts joined as the CLI joins them."""
    ids, texts = [], []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            d = json.loads(line)
            rid = d.get("_id", d.get("id"))
            if rid is None:
                raise ValueError(f"{path}:{n}: no \"_id\" or \"id\"")
            body = d.get("text", d.get("contents", ""))
            ids.append(str(rid))
            texts.append(f"{d['title']} {body}" if d.get("title") else body)
    return ids, texts


class MilvusSparse:
    """One Milvus collection of SPLADE vectors: a VARCHAR primary key `id_field`, the sparse vector
    `field` indexed with `index_type` (SPARSE_INVERTED_INDEX or SPARSE_WAND) for metric IP.

    client: a pymilvus.MilvusClient, or a URI for one ("http://host:19530", or a local file path for
    Milvus Lite). encoder: a splade_index.Encoder for texts (documents and queries)."""

    def __init__(self, client, collection="splade", encoder=None, field="splade", id_field="id",
                 index_type="SPARSE_INVERTED_INDEX", max_id_length=1024):
        from pymilvus import MilvusClient
        self.client = MilvusClient(client) if isinstance(client, str) else client
        self.collection, self.encoder, self.field, self.id_field = collection, encoder, field, id_field
        self.index_type, self.max_id_length = index_type, max_id_length

    def create(self, drop=False):
        """Creates the collection and its sparse index (drop=True: replaces an existing one)."""
        from pymilvus import DataType
        c = self.client
        if c.has_collection(self.collection):
            if not drop:
                raise ValueError(f"collection {self.collection!r} exists (drop=True replaces it)")
            c.drop_collection(self.collection)
        schema = c.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field(self.id_field, DataType.VARCHAR, is_primary=True, max_length=self.max_id_length)
        schema.add_field(self.field, DataType.SPARSE_FLOAT_VECTOR)
        idx = c.prepare_index_params()
        idx.add_index(field_name=self.field, index_type=self.index_type, metric_type="IP")
        c.create_collection(self.collection, schema=schema, index_params=idx)

    def insert_vectors(self, ids, X, batch_size=1000):
        """Inserts rows of X (csr_matrix, columns = the encoder's vocabulary ids) under ids, batch_size
        rows per request; returns the number inserted."""
        if X.shape[0] != len(ids):
            raise ValueError(f"{len(ids)} ids for {X.shape[0]} vectors")
        n = 0
        for s in range(0, len(ids), batch_size):
            rows = csr_rows(X[s:s + batch_size])
            empty = [ids[s + i] for i, r in enumerate(rows) if not r]
            if empty:  # Milvus refuses an empty sparse row; a document without terms matches nothing anyway
                raise ValueError(f"document {empty[0]!r} has an empty vector")
            data = [{self.id_field: i, self.field: r} for i, r in zip(ids[s:s + batch_size], rows)]
            n += self.client.insert(self.collection, data)["insert_count"]
        return n

    def insert_texts(self, ids, texts, batch_size=1000):
        """Encodes texts with the encoder (batch_size at a time) and inserts them; returns the count."""
        n = 0
        for s in range(0, len(ids), batch_size):
            n += self.insert_vectors(ids[s:s + batch_size], self.encoder.encode(texts[s:s + batch_size]), batch_size)
        return n

    def insert_corpus(self, path, batch_size=1000):
        ids, texts = read_corpus(path)
        return self.insert_texts(ids, texts, batch_size)

    def search(self, queries, k=10, batch_size=100):
        """Top k per query: texts (encoded with the encoder, in one call as `splade-index query` does)
        or a csr_matrix of query vectors -> [[(id, score), ...], ...], best first."""
        if isinstance(queries, str):
            queries = [queries]
        X = queries if hasattr(queries, "tocsr") else self.encoder.encode(list(queries), chunk=None)
        rows = csr_rows(X)
        self.client.load_collection(self.collection)
        out = []
        for s in range(0, len(rows), batch_size):
            res = self.client.search(self.collection, data=rows[s:s + batch_size], anns_field=self.field, limit=k,
                                     search_params={"metric_type": "IP"}, output_fields=[self.id_field])
            out += [[(h["entity"][self.id_field] if "entity" in h else h["id"], float(h["distance"])) for h in hits]
                    for hits in res]
        return out

    def count(self):
        r = self.client.query(self.collection, filter="", output_fields=["count(*)"])
        return int(r[0]["count(*)"])


__all__ = ["MilvusSparse", "csr_rows", "read_corpus"]
