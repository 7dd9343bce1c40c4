"""Index: build an index from a corpus or from vectors, open one, search it, read its documents."""
import ctypes
import math
import os
import sys

import numpy as np
import scipy.sparse as sp

from . import _lib
from ._lib import lib, check, byref
from .encoder import Encoder, as_bytes
from .errors import MismatchError, NotFoundError, UnsupportedError, InvalidArgumentError

# Queries per splade_search_batch call: Ctrl-C is handled between two of them.
SEARCH_CHUNK = 4096
# Rows of vectors per progress report when building from vectors.
VECTOR_CHUNK = 65536
_DEFAULT_MODEL = "splade-tiny"  # SPLADE_DEFAULT_MODEL: the name an index records when none is given

_HIT = np.dtype([("doc", "<u4"), ("score", "<u4")])
assert _HIT.itemsize == ctypes.sizeof(_lib.Hit)
# splade_qvec's query_max field read straight out of the array of C structs
_QMAX = np.dtype({"names": ["query_max"], "formats": ["<f4"], "offsets": [_lib.Qvec.query_max.offset],
                  "itemsize": ctypes.sizeof(_lib.Qvec)})


def _progress_fn(progress, desc):
    """progress: None (silent), a callable(done, total) (total 0 when unknown), or True (tqdm when
    installed, else one updating line on stderr). Returns (update, close)."""
    if progress is None or progress is False:
        return (lambda done, total: None), (lambda: None)
    if callable(progress):
        return progress, (lambda: None)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        def update(done, total):
            sys.stderr.write(f"\r{desc}: {done}" + (f"/{total}" if total else ""))
            sys.stderr.flush()
        return update, (lambda: sys.stderr.write("\n"))
    bar = tqdm(desc=desc, unit="doc")

    def update(done, total):
        if total and bar.total != total:
            bar.total = total
        bar.update(done - bar.n)
    return update, bar.close


def _as_csr(x, what):
    """A float32 CSR matrix with int32 indices: x itself when it is one, else one converted copy."""
    if not sp.issparse(x):
        raise TypeError(f"{what} must be a scipy.sparse matrix (e.g. Encoder.encode's output)")
    x = sp.csr_matrix(x)
    if x.dtype != np.float32 or x.indices.dtype != np.int32:
        x = sp.csr_matrix((x.data.astype(np.float32), x.indices.astype(np.int32), x.indptr), shape=x.shape)
    return x


class _Builder:
    """A splade_index_builder, freed on exit."""

    def __init__(self, create):
        self.h = ctypes.c_void_p()
        check(create(byref(self.h)))
        # the CLI's reproducible builds (src/cli/cli_env.c): the library reads no environment
        epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
        if epoch.isdigit():
            lib.splade_builder_set_build_time(self.h, int(epoch))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        lib.splade_builder_free(self.h)

    def add_doc(self, where, doc_id, title, body, line):
        doc = ctypes.c_uint32()
        check(lib.splade_builder_add_doc(self.h, where, doc_id, title, body, line, byref(doc)))
        return doc.value

    def set_vector(self, doc, terms, weights, n):
        check(lib.splade_builder_set_vector(self.h, doc, terms, weights, n))

    def write(self, path, threads, keep_order):
        lib.splade_builder_keep_order(self.h, int(bool(keep_order)))
        lib.splade_builder_set_threads(self.h, int(threads or 0))
        st = _lib.BuildStats()
        check(lib.splade_builder_write(self.h, os.fsencode(path), byref(st)))
        return {name: getattr(st, name) for name, _ in st._fields_}


def _encoder_for(model, device, precision, threads, max_length, batch_size):
    if isinstance(model, Encoder):
        return model
    return Encoder(model, device=device, precision=precision, threads=threads, max_length=max_length,
                   batch_size=batch_size)


class Index:
    """An open index (DIR/index.spx, memory-mapped read-only, every checksum verified at open).

    Searching is thread-safe: several Python threads may search one Index at once (the GIL is
    released while the C library searches). Picklable: a worker process re-opens it from its path.
    """

    def __init__(self, path, model=None, device="cpu", precision="bf16", threads=None):
        """Same as Index.open(path, ...)."""
        self.path = os.fspath(path)
        self._reopen_args = (self.path, model, device, precision, threads)
        self._model, self._device, self._precision, self._threads = model, device, precision, threads
        h = ctypes.c_void_p()
        check(lib.splade_index_open(os.fsencode(self.path), byref(h)))
        self._h = h.value
        # The term lookup table is built once here, so that searches from several threads only read.
        check(lib.splade_index_prepare_lookup(self._h))
        info = lib.splade_index_get_info(self._h).contents
        self.info = {name: getattr(info, name) for name, _ in info._fields_}
        for key in ("model_name", "model_dir"):
            self.info[key] = (self.info[key] or b"").decode("utf-8", "surrogateescape")
        self._ids = None      # object array of the corpus ids, + "" for padding
        self._by_id = None
        self._vocab = None
        self._qenc = None
        self.build_stats = None

    @classmethod
    def open(cls, path, model=None, device="cpu", precision="bf16", threads=None):
        """Opens DIR/index.spx (or the file itself). model overrides the model text queries are
        encoded with (default: the one the index records; another model's fingerprint raises
        MismatchError at the first text search). device/precision/threads: the query encoder's
        (CPU by default, as the CLI: one query's forward pass costs less than a GPU's start-up)."""
        return cls(path, model, device, precision, threads)

    def __reduce__(self):
        return (Index, self._reopen_args)

    # ---- building ----

    @classmethod
    def build(cls, path, corpus=None, vectors=None, ids=None, model=None, threads=None, progress=None, *,
              titles=None, texts=None, vocab=None, device="auto", precision="bf16", max_length=256,
              batch_size=None, keep_order=False):
        """Builds PATH/index.spx and returns the opened Index (build statistics in .build_stats).

        corpus: a JSONL file (BEIR {"_id","title","text"} or Anserini {"id","contents"}) encoded with
            model (an Encoder, or a folder / ORG/NAME / None as Encoder takes it); the same index
            `splade-index build CORPUS --model MODEL` writes.
        vectors: a csr_matrix (n x V, weights > 0; explicit zeros are dropped) with ids (n strings),
            optional titles and texts (stored, shown by .doc()). Columns are term ids of model's
            vocabulary when model is given (text queries then work), else of vocab (V tokens;
            default: "0", "1", ...).
        threads: encoder and inversion threads (None: all cores). progress: None, True (tqdm) or a
            callable(done, total). The previous index at PATH stays until the new one is complete
            and verified. Ctrl-C stops between two chunks of documents (none is written then).
        """
        if (corpus is None) == (vectors is None):
            raise TypeError("Index.build: give corpus=PATH or vectors=csr_matrix (with ids=)")
        update, close = _progress_fn(progress, "indexing")
        try:
            if corpus is not None:
                enc = _encoder_for(model, device, precision, threads, max_length, batch_size)
                stats = cls._build_corpus(path, os.fsencode(corpus), enc, model, threads, batch_size, keep_order,
                                          update)
            else:
                stats = cls._build_vectors(path, vectors, ids, titles, texts, model, vocab, threads, keep_order,
                                           update, device, precision, max_length)
        finally:
            close()
        ix = cls(path)
        ix.build_stats = stats
        return ix

    @staticmethod
    def _model_name(model):
        name = model.model_name if isinstance(model, Encoder) else model
        return os.fsencode(name if name is not None else _DEFAULT_MODEL)

    @classmethod
    def _build_corpus(cls, path, corpus, enc, model, threads, batch_size, keep_order, update):
        """src/index/ingest_corpus.c's loop, driven from Python so that progress is reported and
        Ctrl-C is handled between chunks: the same chunks (the CLI's batch x 8), hence the same index."""
        reader = ctypes.c_void_p()
        check(lib.splade_corpus_open(corpus, byref(reader)))
        try:
            create = lambda out: lib.splade_builder_create_for_model(enc._model.ptr, cls._model_name(model),
                                                                     enc.max_length, out)
            with _Builder(create) as b:
                total = lib.splade_count_lines(corpus)
                cap = (batch_size or 32) * 8
                texts, docs, done = [], [], 0
                d = _lib.Doc()
                while True:
                    got = check(lib.splade_corpus_next(reader, byref(d)))
                    if got:
                        docs.append(b.add_doc(corpus, d.id, d.title, d.body, d.line))
                        texts.append(ctypes.string_at(d.text, d.text_len))
                    if texts and (len(texts) == cap or not got):
                        cls._flush(b, enc, texts, docs, batch_size, threads)
                        done += len(texts)
                        texts, docs = [], []
                        update(done, total)
                    if not got:
                        break
                return b.write(path, threads, keep_order)
        finally:
            lib.splade_corpus_close(reader)

    @staticmethod
    def _flush(b, enc, texts, docs, batch_size, threads):
        vecs, n, cut = enc.encode_chunk(texts, batch_size, threads)
        try:
            for i in range(n):
                b.set_vector(docs[i], vecs[i].terms, vecs[i].weights, vecs[i].n)
        finally:
            enc.free_rows(vecs, n)
        lib.splade_builder_add_truncated(b.h, cut)

    @classmethod
    def _build_vectors(cls, path, vectors, ids, titles, texts, model, vocab, threads, keep_order, update, device,
                       precision, max_length):
        x = _as_csr(vectors, "vectors")
        if (x.data <= 0).any():
            x = x.copy()
            x.eliminate_zeros()  # explicit zeros dropped; negative weights left for the library to refuse
        if not x.has_canonical_format:
            x = x.copy()
            x.sum_duplicates()
        n, n_cols = x.shape
        ids = list(ids) if ids is not None else None
        if ids is None or len(ids) != n:
            raise InvalidArgumentError(f"Index.build: ids must give one id per row ({n} rows, "
                                       f"{'no ids' if ids is None else f'{len(ids)} ids'})")
        for name, col in (("titles", titles), ("texts", texts)):
            if col is not None and len(col) != n:
                raise InvalidArgumentError(f"Index.build: {name} has {len(col)} entries for {n} rows")
        if model is not None:
            enc = _encoder_for(model, device, precision, threads, max_length, None)
            if n_cols != enc.vocab_size:
                raise InvalidArgumentError(f"Index.build: the vectors have {n_cols} columns but the model's "
                                           f"vocabulary has {enc.vocab_size} tokens")
            create = lambda out: lib.splade_builder_create_for_model(enc._model.ptr, cls._model_name(model),
                                                                     enc.max_length, out)
        else:
            tokens = [as_bytes(t) for t in vocab] if vocab is not None else [str(i).encode() for i in range(n_cols)]
            if len(tokens) != n_cols:
                raise InvalidArgumentError(f"Index.build: vocab has {len(tokens)} tokens for {n_cols} columns")
            arr = (ctypes.c_char_p * max(n_cols, 1))(*tokens)
            create = lambda out: lib.splade_builder_create(arr, n_cols, None, out)
        with _Builder(create) as b:
            ip, dp, indptr = x.indices.ctypes.data, x.data.ctypes.data, x.indptr
            for i in range(n):
                doc_id = ids[i] if isinstance(ids[i], (str, bytes)) else str(ids[i])
                doc = b.add_doc(b"<vectors>", as_bytes(doc_id), as_bytes(titles[i]) if titles is not None else b"",
                                as_bytes(texts[i]) if texts is not None else b"", i + 1)
                s, e = int(indptr[i]), int(indptr[i + 1])
                b.set_vector(doc, ip + 4 * s, dp + 4 * s, e - s)
                if (i + 1) % VECTOR_CHUNK == 0:
                    update(i + 1, n)
            update(n, n)
            return b.write(path, threads, keep_order)

    # ---- reading ----

    def __len__(self):
        return self.info["n_docs"]

    def _id_table(self):
        if self._ids is None:
            n = self.info["n_docs"]
            t = np.empty(n + 1, dtype=object)
            ln = ctypes.c_size_t()
            for i in range(n):
                p = lib.splade_index_doc_id(self._h, i, byref(ln))
                t[i] = ctypes.string_at(p, ln.value).decode("utf-8", "surrogateescape")
            t[n] = ""  # what a missing hit maps to
            self._ids = t
        return self._ids

    @property
    def ids(self):
        """Corpus ids by internal doc id."""
        return list(self._id_table()[:-1])

    @property
    def vocab(self):
        """Token of every term id (the columns search() takes for vector queries)."""
        if self._vocab is None:
            ln = ctypes.c_size_t()
            self._vocab = [ctypes.string_at(lib.splade_index_term(self._h, t, byref(ln)), ln.value)
                           .decode("utf-8", "surrogateescape") for t in range(self.info["n_terms"])]
        return self._vocab

    def doc(self, doc_id):
        """(title, text) stored for a corpus id: the text is its first 200 bytes (docs/FORMAT.md)."""
        if self._by_id is None:
            self._by_id = {d: i for i, d in enumerate(self._id_table()[:-1])}
        i = self._by_id.get(str(doc_id))
        if i is None:
            raise NotFoundError(f"not found: no document with id {doc_id!r} in {self.path}")
        title, snippet = ctypes.c_char_p(), ctypes.c_char_p()
        lib.splade_index_doc_text(self._h, i, byref(title), byref(snippet))
        return title.value.decode("utf-8", "replace"), snippet.value.decode("utf-8", "replace")

    # ---- searching ----

    def _query_encoder(self):
        """The model the index was built with (src/query/query_encode.c's choice), loaded once."""
        if self._qenc is None:
            info = self.info
            if not info["flags"] & _lib.IX_HAS_MODEL:
                raise UnsupportedError("unsupported: this index was built from precomputed vectors (no model): "
                                       "search it with a csr_matrix of query vectors", -15, "unsupported")
            model = self._model
            if model is None:
                model = info["model_dir"] if info["model_dir"] and os.path.isdir(info["model_dir"]) \
                    else (info["model_name"] or None)
            enc = Encoder(model, device=self._device, precision=self._precision, threads=self._threads,
                          max_length=info["max_length"])
            if enc._model.fingerprint != info["fingerprint"]:
                detail = (f"the index was built with model \"{info['model_name']}\" ({info['model_dir']}, fingerprint "
                          f"{info['fingerprint']:016x}) but {enc.model_dir} has fingerprint "
                          f"{enc._model.fingerprint:016x}: rebuild the index or pass the right model")
                raise MismatchError("index built with another model: " + detail, -16, "mismatch", detail)
            self._qenc = enc
        return self._qenc

    def _encode_queries(self, texts):
        # One library call for all texts, as `splade-index query --queries` encodes them (see
        # Encoder.encode's chunk): the same vectors, hence the same runs.
        return self._query_encoder().encode(list(texts), chunk=None)

    def search(self, queries, k=10, threads=None):
        """Top k of each query -> (ids, scores), numpy arrays of shape (n, k), best first.

        queries: texts (str or a list of them; encoded with the index's model, on the CPU unless
        Index.open said otherwise) or a scipy.sparse matrix of query vectors whose columns are the
        index's term ids (Encoder.encode's output for an index of that model). ids: object array of
        str; scores: float64, what the CLI prints in TREC runs. A query with fewer than k matching
        documents is padded with "" and -inf. threads: search threads (None: all cores); results
        do not depend on it. Ctrl-C is handled between chunks of 4,096 queries, and for texts after
        they are encoded (in one call, as the CLI does: see Encoder.encode's chunk)."""
        if k < 1:
            raise InvalidArgumentError(f"k must be >= 1, got {k}")
        if isinstance(queries, (str, bytes)):
            queries = [queries]
        x = _as_csr(queries, "queries") if sp.issparse(queries) else self._encode_queries(queries)
        ids, scores = [], []
        for s in range(0, x.shape[0], SEARCH_CHUNK):
            i, sc = self._search_chunk(x[s:s + SEARCH_CHUNK] if x.shape[0] > SEARCH_CHUNK else x, k, threads)
            ids.append(i)
            scores.append(sc)
        if not ids:
            return np.empty((0, k), dtype=object), np.empty((0, k), dtype=np.float64)
        return (ids[0], scores[0]) if len(ids) == 1 else (np.concatenate(ids), np.concatenate(scores))

    def _search_chunk(self, x, k, threads):
        nq, n_terms = x.shape[0], self.info["n_terms"]
        qs = (_lib.Qvec * max(nq, 1))()
        base, size = ctypes.addressof(qs), ctypes.sizeof(_lib.Qvec)
        ip, dp, indptr = x.indices.ctypes.data, x.data.ctypes.data, x.indptr.tolist()
        build, built = lib.splade_qvec_build, 0
        try:
            for i in range(nq):
                s = indptr[i]
                check(build(ip + 4 * s, dp + 4 * s, indptr[i + 1] - s, n_terms, base + i * size))
                built += 1
            hits = np.zeros((nq, k), dtype=_HIT)
            n_hits = np.zeros(nq, dtype=np.int32)
            check(lib.splade_search_batch(self._h, base, nq, k, _lib.ALGO_BMP, int(threads or 0),
                                          hits.ctypes.data, n_hits.ctypes.data))
            qmax = np.frombuffer(qs, dtype=_QMAX, count=nq)["query_max"].astype(np.float64)
        finally:
            for i in range(built):
                lib.splade_qvec_free(base + i * size)
        found = np.arange(k)[None, :] < n_hits[:, None]
        table = self._id_table()
        ids = table[np.where(found, hits["doc"], len(table) - 1)]
        # splade_hit_score's arithmetic, in the same order: score * doc_scale * (query_max / 255)
        raw = hits["score"].astype(np.float64) * np.float64(self.info["doc_scale"]) * (qmax / 255.0)[:, None]
        return ids, np.where(found, raw, -math.inf)

    def close(self):
        """Unmaps the index now (also done when the object is collected)."""
        if getattr(self, "_h", None):
            lib.splade_index_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        return f"Index({self.path!r}, {len(self)} documents, model={self.info['model_name']!r})"
