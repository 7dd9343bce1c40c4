"""Index: build an index from a corpus or from vectors, open one, search it, read its documents."""
import ctypes
import math
import os
import sys
import warnings
import weakref

import numpy as np
import scipy.sparse as sp

from . import _call, _lib
from ._lib import lib, check, byref
from .encoder import Encoder, Model, as_bytes, _model_paths, sparse_rows_to_csr
from .errors import CancelledError, GPUError, NotFoundError, InvalidArgumentError

# Queries per splade_search_batch call: a larger batch runs on a worker thread (_call.py) and Ctrl-C
# stops it between two calls.
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

    def write(self, path, threads, keep_order, cancel):
        """Inverts, writes and installs (the library's atomic install); cancel (a _call.Flag) is read
        between the write's stages. Runs on a worker thread: statuses are checked there."""
        lib.splade_builder_keep_order(self.h, int(bool(keep_order)))
        lib.splade_builder_set_threads(self.h, int(threads or 0))
        lib.splade_builder_set_cancel(self.h, cancel.address)
        st = _lib.BuildStats()
        check(lib.splade_builder_write(self.h, os.fsencode(path), byref(st)))
        return {name: getattr(st, name) for name, _ in st._fields_}


    def add(self, path, update, merge, max_segments, threads, cancel):
        """splade_index_add: the builder's documents appended to the index in path as a new segment
        (then the size-tiered merge unless merge is False). Runs on a worker thread."""
        o = _lib.AddOpts()
        lib.splade_add_opts_init(byref(o))
        o.update, o.no_merge = int(bool(update)), int(not merge)
        o.max_segments, o.threads = int(max_segments or 0), int(threads or 0)
        lib.splade_builder_set_threads(self.h, int(threads or 0))
        lib.splade_builder_set_cancel(self.h, cancel.address)
        st = _lib.AddStats()
        check(lib.splade_index_add(self.h, os.fsencode(path), byref(o), byref(st)))
        return _as_dict(st)


def _as_dict(st):
    """A stats structure as a dict: char arrays as str, nested structures as dicts."""
    out = {}
    for name, _ in st._fields_:
        v = getattr(st, name)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "surrogateescape")
        elif isinstance(v, ctypes.Structure):
            v = _as_dict(v)
        out[name] = v
    return out


class _Info(dict):
    """Index.info: the index's numbers (a dict, as always); calling it, Index.info(), also reads the
    segments, as `splade-index info` shows them."""

    def __init__(self, index, fields):
        super().__init__(fields)
        self._index = weakref.ref(index)  # no cycle: the Index closes when the last user drops it

    def __call__(self):
        ix = self._index()
        if ix is None or not ix._h:
            raise InvalidArgumentError("Index.info(): the index is closed")
        return ix._segments()


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

    def __init__(self, path, model=None, device="cpu", precision=None, threads=None):
        """Same as Index.open(path, ...)."""
        self.path = os.fspath(path)
        self._reopen_args = (self.path, model, device, precision, threads)
        self._model, self._device, self._precision, self._threads = model, device, precision, threads
        self._h = None
        self._gpu = None  # the GPU searcher (search(device=...)): a handle, False (none usable) or None (not tried)
        self._qenc = None
        self.build_stats = None
        self._open()

    def _open(self):
        """Opens the current generation of self.path (again, after an add, delete or merge)."""
        h = ctypes.c_void_p()
        check(lib.splade_index_open(os.fsencode(self.path), byref(h)))
        self._h = h.value
        # The term lookup table is built once here, so that searches from several threads only read.
        check(lib.splade_index_prepare_lookup(self._h))
        info = lib.splade_index_get_info(self._h).contents
        fields = {name: getattr(info, name) for name, _ in info._fields_}
        for key in ("model_name", "model_dir"):
            fields[key] = (fields[key] or b"").decode("utf-8", "surrogateescape")
        self.info = _Info(self, fields)
        self._ids = None      # object array of the corpus ids, + "" for padding
        self._by_id = None
        self._vocab = None

    @classmethod
    def open(cls, path, model=None, device="cpu", precision=None, threads=None):
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
              titles=None, texts=None, vocab=None, device="auto", precision=None, max_length=256,
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
            callable(done, total), called on the thread running the build (not the caller's).
            The previous index at PATH stays until the new one is complete and verified. Ctrl-C
            (KeyboardInterrupt) stops the build within one encoder batch, or at the end of the
            write's stage in flight (inversion, write, verification); the previous index stays and
            no temporary file is left.
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
    def _build_corpus(cls, path, corpus, enc, model, threads, batch_size, keep_order, update, finish=None,
                      setup=None, label=None):
        """`splade-index build CORPUS` in one library call, splade_ingest_corpus (the CLI's chunks: batch
        x 8 documents per encoder call, hence the same index), then the write, on a worker thread.
        Progress comes from the library's callback on that thread; Ctrl-C sets the encoder's flag,
        which the encoder (between batches), the ingest (between chunks) and the write (between
        stages) read. A callback that raises stops the build the same way and its exception is
        re-raised here."""
        raised = []

        def progress(user, stage, done, total):
            try:
                update(done, total)
            except BaseException as e:  # noqa: B902 - re-raised once the library has stopped
                raised.append(e)
                enc._cancel.set()
        callback = _lib.PROGRESS_FN(progress)  # referenced until the call returns
        io = _lib.IngestOpts()
        lib.splade_ingest_opts_init(byref(io))
        io.progress, io.cancel = callback, enc._cancel.address
        h = enc._handle(batch_size, threads)
        chunk = (batch_size or 32) * 8  # src/cli/cmd_build.c
        name = label if label is not None else cls._model_name(model)
        create = lambda out: lib.splade_builder_create_for_model(enc._model.ptr, name, enc.max_length, out)
        finish = finish or (lambda b, cancel: b.write(path, threads, keep_order, cancel))

        def work():
            with _Builder(create) as b:
                check(lib.splade_builder_lock(b.h, os.fsencode(path)))  # a second build fails now
                if setup:
                    setup(b)
                check(lib.splade_ingest_corpus(b.h, corpus, h, chunk, byref(io)))
                return finish(b, enc._cancel)
        with enc._lock:
            try:
                return _call.run(work, flags=(enc._cancel,))
            except CancelledError:
                if raised:
                    raise raised[0] from None
                raise
            finally:
                enc._cancel.clear()

    @classmethod
    def _build_vectors(cls, path, vectors, ids, titles, texts, model, vocab, threads, keep_order, update, device,
                       precision, max_length, finish=None, setup=None, label=None):
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
            name = label if label is not None else cls._model_name(model)
            create = lambda out: lib.splade_builder_create_for_model(enc._model.ptr, name, enc.max_length, out)
        else:
            tokens = [as_bytes(t) for t in vocab] if vocab is not None else [str(i).encode() for i in range(n_cols)]
            if len(tokens) != n_cols:
                raise InvalidArgumentError(f"Index.build: vocab has {len(tokens)} tokens for {n_cols} columns")
            arr = (ctypes.c_char_p * max(n_cols, 1))(*tokens)
            create = lambda out: lib.splade_builder_create(arr, n_cols, None, out)
        with _Builder(create) as b:
            check(lib.splade_builder_lock(b.h, os.fsencode(path)))  # as the CLI: a second build fails now
            if setup:
                setup(b)
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
            cancel = _call.Flag()
            finish = finish or (lambda b, flag: b.write(path, threads, keep_order, flag))
            return _call.run(lambda: finish(b, cancel), flags=(cancel,))

    # ---- a living index: add, update, delete, merge (include/splade/segments.h) ----

    def _folder(self):
        return self.path if os.path.isdir(self.path) else os.path.dirname(self.path) or "."

    def _reopen(self):
        """The new generation, opened in place of the old one (the old one is unmapped)."""
        self.close()
        self._open()

    def add(self, corpus=None, vectors=None, ids=None, model=None, threads=None, progress=None, *, titles=None,
            texts=None, vocab=None, update=False, merge=True, max_segments=None, memory=None, device="auto",
            precision=None, max_length=None, batch_size=None):
        """Appends documents as a new segment (`splade-index add`) and reopens the index; returns the
        add's statistics (a dict of splade_add_stats: n_added, n_replaced, generation, n_merged...).

        corpus / vectors / ids / titles / texts / vocab: as Index.build. The corpus is encoded with
        the index's model unless model says otherwise (another fingerprint raises MismatchError);
        vectors of a model's index have its vocabulary's columns. Quantized with the index's
        doc_scale. An id already live raises DuplicateIdError, unless update=True (then the live
        document is replaced: `splade-index update`). merge=False: no size-tiered merge afterwards
        (else the smallest segments are merged when there are more than max_segments, default 10).
        memory: a budget in bytes (`--memory`): past it, the documents so far become a segment.
        Ctrl-C stops it as it stops Index.build; the index keeps its previous generation."""
        if (corpus is None) == (vectors is None):
            raise TypeError("Index.add: give corpus=PATH or vectors=csr_matrix (with ids=)")
        folder = self._folder()
        has_model = bool(self.info["flags"] & _lib.IX_HAS_MODEL)
        label = None
        if model is None and (corpus is not None or has_model):
            model = self.info["model_dir"] or self.info["model_name"]
            label = os.fsencode(self.info["model_name"])
        if max_length is None:
            max_length = self.info["max_length"] or 256

        def setup(b):
            if memory:
                check(lib.splade_builder_set_memory(b.h, os.fsencode(folder), int(memory), 1))

        def finish(b, cancel):
            return b.add(folder, update, merge, max_segments, threads, cancel)
        update_fn, close = _progress_fn(progress, "adding")
        try:
            if corpus is not None:
                enc = _encoder_for(model, device, precision, threads, max_length, batch_size)
                stats = self._build_corpus(folder, os.fsencode(corpus), enc, model, threads, batch_size, False,
                                           update_fn, finish=finish, setup=setup, label=label)
            else:
                stats = self._build_vectors(folder, vectors, ids, titles, texts, model, vocab, threads, False,
                                            update_fn, device, precision, max_length, finish=finish, setup=setup,
                                            label=label)
        finally:
            close()
            self._reopen()
        return stats

    def update(self, *args, **kwargs):
        """Index.add(..., update=True): documents whose id is live replace it (`splade-index update`)."""
        kwargs["update"] = True
        return self.add(*args, **kwargs)

    def delete(self, ids, strict=False):
        """Deletes the live documents with these ids (`splade-index delete`) and reopens the index.
        Returns {"n_deleted", "n_unknown", "unknown" (the first few, quoted), "generation"}: ids not
        in the index are counted, not an error, unless strict=True (NotFoundError, nothing deleted)."""
        if isinstance(ids, (str, bytes)):
            ids = [ids]
        raw = [as_bytes(i if isinstance(i, (str, bytes)) else str(i)) for i in ids]
        arr = (ctypes.c_char_p * max(len(raw), 1))(*raw)
        st = _lib.DeleteStats()
        folder = os.fsencode(self._folder())

        def work():
            check(lib.splade_index_delete(folder, arr, len(raw), int(bool(strict)), byref(st)))
            return _as_dict(st)
        try:
            return _call.run(work)
        finally:
            self._reopen()

    def merge(self, max_segments=None, threads=None):
        """Merges the segments into one (`splade-index merge`), dropping deleted documents, or only the
        smallest until max_segments remain; reopens the index; returns splade_merge_stats as a dict
        (n_merged 0: nothing to do). The merge streams posting lists (its memory does not grow with
        the collection); searches answer exactly as before. Ctrl-C stops it between two terms (or
        before its segment is renamed into place): the index keeps its generation."""
        st, o, cancel = _lib.MergeStats(), _lib.MergeOpts(), _call.Flag()
        lib.splade_merge_opts_init(byref(o))
        o.max_segments, o.threads, o.cancel = int(max_segments or 0), int(threads or 0), cancel.address
        folder = os.fsencode(self._folder())

        def work():
            check(lib.splade_index_merge_opts(folder, byref(o), byref(st)))
            return _as_dict(st)
        try:
            return _call.run(work, flags=(cancel,))
        finally:
            self._reopen()

    def _segments(self):
        """Index.info(): self.info plus the generation and every segment (`splade-index info`)."""
        out = dict(self.info)
        out["generation"] = lib.splade_index_generation(self._h)
        segs = []
        for i in range(lib.splade_index_segment_count(self._h)):
            si = _lib.SegmentInfo()
            check(lib.splade_index_segment_info(self._h, i, byref(si)))
            segs.append(_as_dict(si))
        for g in segs:
            g["deletions"] = g["deletions"] or ""
        out["segments"] = segs
        out["n_deleted"] = sum(g["n_deleted"] for g in segs)
        return out

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
        """The model text queries are encoded with, loaded once: splade_index_load_model, the library's
        choice for `splade-index query` (the override, else the folder the index records, else its
        name; the fingerprint must match the index's)."""
        if self._qenc is None:
            o = _lib.QueryEncodeOpts()
            lib.splade_query_encode_opts_init(byref(o))
            paths = _model_paths()  # referenced until the call returns
            o.model = None if self._model is None else os.fsencode(self._model)
            o.model_paths = ctypes.pointer(paths)
            ptr = ctypes.c_void_p()
            check(lib.splade_index_load_model(self._h, byref(o), byref(ptr)))
            self._qmodel = Model(None, ptr=ptr)
            self._qenc = Encoder(self._qmodel, device=self._device, precision=self._precision,
                                 threads=self._threads, max_length=self.info["max_length"])
        return self._qenc

    def _encode_queries(self, texts):
        # One library call for all texts, as `splade-index query --queries` encodes them (see
        # Encoder.encode's chunk): the same vectors, hence the same runs.
        enc = self._query_encoder()
        m = self._qmodel
        if lib.splade_model_has_query_table(m.ptr):  # inference-free model: the query table, no forward pass
            texts = [t if isinstance(t, bytes) else t.encode("utf-8", "surrogatepass") for t in texts]
            vecs = (_lib.Sparse * max(len(texts), 1))()
            max_len = lib.splade_model_config(m.ptr).contents.max_position
            try:
                for i, t in enumerate(texts):
                    check(lib.splade_model_query_vector(m.ptr, t, len(t), max_len, byref(vecs[i])))
                return sparse_rows_to_csr(vecs, len(texts), m.vocab_size)
            finally:
                for i in range(len(texts)):
                    lib.splade_sparse_free(byref(vecs[i]))
        return enc.encode(list(texts), chunk=None)

    def search(self, queries, k=10, threads=None, device="cpu", query_cut=0, rescore=0, bound_factor=0.0,
               budget=0):
        """Top k of each query -> (ids, scores), numpy arrays of shape (n, k), best first.

        queries: texts (str or a list of them; encoded with the index's model, on the CPU unless
        Index.open said otherwise) or a scipy.sparse matrix of query vectors whose columns are the
        index's term ids (Encoder.encode's output for an index of that model). ids: object array of
        str; scores: float64, what the CLI prints in TREC runs. A query with fewer than k matching
        documents is padded with "" and -inf. threads: search threads (None: all cores); results
        do not depend on it. Ctrl-C stops the encoding of text queries before its next batch (they
        are encoded in one group, as the CLI does: see Encoder.encode's chunk) and a search of more
        than 4,096 queries between two library calls of 4,096.

        device: where the batch is searched, "cpu" (default), or "cuda" / "auto": on the GPU
        (splade_gpu_search_batch: the same results as the CPU's; the index's postings are uploaded at
        the first such search and stay there until close). Without a usable GPU the CPU searches,
        after a warning for "cuda" (as `splade-index query --device cuda`).

        Approximate search (CPU only; the default is exact), as `splade-index query --query-cut N
        --rescore R --bound-factor F`: query_cut > 0 searches only the query's query_cut terms of
        largest impact; with rescore = R (needs query_cut) those terms pick the R best documents, which
        are then scored exactly over all the query's terms (every returned score is exact; a forward
        index of ~3 bytes per posting is built in memory at the first such search); bound_factor in
        (0, 1) skips document ranges whose bound times it cannot beat the k-th score. On the realistic
        100 k collection query_cut=12, rescore=100 gives recall@10 0.957 in a third of Seismic's time
        (bench/results/query-approx-2026-11-26.md). budget = B (needs rescore; not with a bound_factor
        below 1), as `--budget B`: the candidates come from at most B postings of the cut terms' long
        lists, those of largest query impact x impact first, from impact-ordered copies built in
        memory at the first such search (~5 bytes per posting; bench/results/query-approx-scale-2026-11-26.md)."""
        if k < 1:
            raise InvalidArgumentError(f"k must be >= 1, got {k}")
        approx = None
        if query_cut or rescore or bound_factor or budget:
            if rescore and not query_cut:
                raise InvalidArgumentError("rescore needs query_cut (the terms that pick the candidates)")
            if budget and not rescore:
                raise InvalidArgumentError("budget needs rescore (the budget picks the candidates it rescores)")
            if device != "cpu":
                raise InvalidArgumentError("query_cut / rescore / bound_factor search on the CPU: device must be "
                                           f'"cpu", got {device!r}')
            approx = _lib.SearchOpts(int(query_cut), float(bound_factor), int(rescore), int(budget))
        if device not in ("cpu", "cuda", "gpu", "auto"):
            raise InvalidArgumentError(f'device must be "cpu", "cuda" or "auto", got {device!r}')
        if isinstance(queries, (str, bytes)):
            queries = [queries]
        x = _as_csr(queries, "queries") if sp.issparse(queries) else self._encode_queries(queries)
        if x.shape[0] == 0:
            return np.empty((0, k), dtype=object), np.empty((0, k), dtype=np.float64)
        gpu = self._gpu_searcher(device)
        if x.shape[0] <= SEARCH_CHUNK:  # one C call of at most a few seconds: no thread to start
            return self._search_chunk(x, k, threads, gpu, approx)
        stop = _call.Flag()  # read here between two C calls (the searcher has no flag of its own)

        def work():
            ids, scores = [], []
            for s in range(0, x.shape[0], SEARCH_CHUNK):
                if stop.is_set():
                    return None
                i, sc = self._search_chunk(x[s:s + SEARCH_CHUNK], k, threads, gpu, approx)
                ids.append(i)
                scores.append(sc)
            return np.concatenate(ids), np.concatenate(scores)
        return _call.run(work, flags=(stop,))

    def _gpu_searcher(self, device):
        """The GPU searcher for device "cuda"/"auto" (created once), or None: the CPU searches."""
        if device == "cpu":
            return None
        if self._gpu is None:
            h = ctypes.c_void_p()
            try:
                check(lib.splade_gpu_searcher_create(self._h, -1, byref(h)))
                self._gpu = h.value
            except GPUError as e:  # no usable GPU (or not enough memory on it): the CPU
                self._gpu, self._gpu_why = False, str(e)
        if self._gpu is False:
            if device != "auto":
                warnings.warn(f"GPU search unavailable ({self._gpu_why}); searching on the CPU", stacklevel=3)
            return None
        return self._gpu

    def calibrate(self, queries, recall_target, k=10, threads=None):
        """The cheapest approximate setting whose recall@k on these queries (texts or a CSR matrix, as
        search takes; a few hundred of the real ones) reaches recall_target, measured against the exact
        answers (splade_search_calibrate: query_cut 24, rescore 200 and budgets of 0.1 to 1.6 x the
        documents, cheapest first; as `splade-index query --recall-target`). Returns a dict with
        query_cut, rescore, budget (all 0 when no setting reaches it: search exactly) and the measured
        recall; pass the first three to search."""
        if not 0.0 < float(recall_target) <= 1.0:
            raise InvalidArgumentError(f"recall_target must be in (0, 1], got {recall_target!r}")
        if k < 1:
            raise InvalidArgumentError(f"k must be >= 1, got {k}")
        if isinstance(queries, (str, bytes)):
            queries = [queries]
        x = _as_csr(queries, "queries") if sp.issparse(queries) else self._encode_queries(queries)
        if x.shape[0] == 0:
            raise InvalidArgumentError("calibrate needs at least one query")
        opts, recall = _lib.SearchOpts(), ctypes.c_double()

        def run(_, base, nq):
            check(lib.splade_search_calibrate(self._h, base, nq, k, float(recall_target), int(threads or 0),
                                              byref(opts), byref(recall)))
        self._with_qvecs(x, run)
        return {"query_cut": opts.query_cut, "rescore": opts.rescore, "budget": opts.budget, "recall": recall.value}

    def _with_qvecs(self, x, fn):
        """fn(x's rows as an array of splade_qvec structs, its address, their count); freed after."""
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
            return fn(qs, base, nq)
        finally:
            for i in range(built):
                lib.splade_qvec_free(base + i * size)

    def _search_chunk(self, x, k, threads, gpu=None, approx=None):
        nq = x.shape[0]

        def run(qs, base, _):
            hits = np.zeros((nq, k), dtype=_HIT)
            n_hits = np.zeros(nq, dtype=np.int32)
            if gpu:
                check(lib.splade_gpu_search_batch(gpu, base, nq, k, hits.ctypes.data, n_hits.ctypes.data))
            elif approx is not None:
                check(lib.splade_search_batch_opts(self._h, base, nq, k, _lib.ALGO_AUTO, byref(approx),
                                                   int(threads or 0), hits.ctypes.data, n_hits.ctypes.data))
            else:
                check(lib.splade_search_batch(self._h, base, nq, k, _lib.ALGO_AUTO, int(threads or 0),
                                              hits.ctypes.data, n_hits.ctypes.data))
            return hits, n_hits, np.frombuffer(qs, dtype=_QMAX, count=nq)["query_max"].astype(np.float64)
        hits, n_hits, qmax = self._with_qvecs(x, run)
        found = np.arange(k)[None, :] < n_hits[:, None]
        table = self._id_table()
        ids = table[np.where(found, hits["doc"], len(table) - 1)]
        # splade_hit_score's arithmetic, in the same order: score * doc_scale * (query_max / 255)
        raw = hits["score"].astype(np.float64) * np.float64(self.info["doc_scale"]) * (qmax / 255.0)[:, None]
        return ids, np.where(found, raw, -math.inf)

    def close(self):
        """Unmaps the index now (also done when the object is collected)."""
        if getattr(self, "_gpu", None):  # before the index it reads
            lib.splade_gpu_searcher_free(self._gpu)
        self._gpu = None
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
