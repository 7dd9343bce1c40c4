"""Loading libsplade.so.0 and declaring the C functions the package calls (ctypes).

The structures below mirror include/splade/*.h field for field; tests/test_abi.py compiles a small C
program against include/ and checks every size and offset, so a header change that is not mirrored
here fails the suite instead of corrupting memory.

ctypes releases the GIL for the whole of every foreign call, so encoding, building and searching
run while other Python threads go on.
"""
import ctypes
import ctypes.util
import os

from .errors import raise_for_status

_HERE = os.path.dirname(os.path.abspath(__file__))
SONAME = "libsplade.so.0"


def _candidates():
    """Where the library is looked for, in order (docs/PYTHON.md, "Finding the library")."""
    env = os.environ.get("SPLADE_LIB")
    if env:
        yield env, "$SPLADE_LIB"
        return  # an explicit choice is never silently replaced by another library
    yield os.path.join(_HERE, SONAME), "the package folder"
    # Running from a source checkout (PYTHONPATH=python): the library `make` just built.
    yield os.path.join(_HERE, "..", "..", "build", SONAME), "the checkout's build/"
    found = ctypes.util.find_library("splade")  # ldconfig's cache: `make install` as root
    yield (found or SONAME), "the system (ld.so search path)"


def _load():
    tried = []
    for path, where in _candidates():
        if where != "the system (ld.so search path)" and not os.path.exists(path):
            tried.append(f"{path} ({where}: absent)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(f"{path} ({where}: {e})")
    raise ImportError(
        "splade_index: cannot load libsplade.so.0; tried:\n  " + "\n  ".join(tried) +
        "\nbuild it with `make` and set SPLADE_LIB=/path/to/build/libsplade.so.0, or reinstall the package "
        "after `make` (pip install ./python bundles build/libsplade.so.0), or `make install`.")


lib, path = _load()

c_int, c_int32, c_uint32, c_uint64, c_float, c_double = (ctypes.c_int, ctypes.c_int32, ctypes.c_uint32,
                                                       ctypes.c_uint64, ctypes.c_float, ctypes.c_double)
c_size_t, c_char_p, c_void_p, c_bool, c_long = (ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p,
                                                ctypes.c_bool, ctypes.c_long)
POINTER, byref = ctypes.POINTER, ctypes.byref


class Sparse(ctypes.Structure):  # splade_sparse (include/splade/sparse.h)
    _fields_ = [("n", c_int32), ("terms", POINTER(c_int32)), ("weights", POINTER(c_float))]


class EncoderOpts(ctypes.Structure):  # splade_encoder_opts (include/splade/encoder.h)
    _fields_ = [("device", c_int), ("threads", c_int), ("max_length", c_int32), ("batch_size", c_int32),
                ("lmhead", c_int), ("threshold", c_float), ("top_k", c_int32), ("quiet", c_int),
                ("max_batch_tokens", c_int32), ("precision", c_int), ("gpu_dense_output", c_int),
                ("cpu_batch_bytes", c_size_t), ("cancel", c_void_p), ("n_devices", c_int32),
                ("devices", c_int32 * 16), ("cpu_precision", c_int)]


class ModelPaths(ctypes.Structure):  # splade_model_paths (include/splade/model.h)
    _fields_ = [("cache_dir", c_char_p), ("default_model", c_char_p), ("default_origin", c_char_p)]


# splade_progress_fn (include/splade.h): called on the thread running the operation (a worker thread
# of ours, which ctypes gives the GIL for the call)
PROGRESS_FN = ctypes.CFUNCTYPE(None, c_void_p, c_char_p, c_uint64, c_uint64)


class IngestOpts(ctypes.Structure):  # splade_ingest_opts (include/splade/build.h)
    _fields_ = [("skip_invalid", c_int), ("allow_empty", c_int), ("skipped", c_uint32), ("progress", PROGRESS_FN),
                ("progress_user", c_void_p), ("cancel", c_void_p)]


class QueryEncodeOpts(ctypes.Structure):  # splade_query_encode_opts (include/splade/pipeline.h)
    _fields_ = [("model", c_char_p), ("device", c_char_p), ("precision", c_char_p), ("threads", c_int),
                ("model_paths", POINTER(ModelPaths)), ("max_batch_tokens", c_int32)]


class Config(ctypes.Structure):  # splade_config (include/splade/model.h)
    _fields_ = [("vocab_size", c_int32), ("hidden_size", c_int32), ("num_layers", c_int32),
                ("num_heads", c_int32), ("intermediate_size", c_int32), ("max_position", c_int32),
                ("type_vocab_size", c_int32), ("pad_token_id", c_int32), ("layer_norm_eps", c_float),
                ("tie_word_embeddings", c_bool), ("do_lower_case", c_bool),
                # appended in the header (DistilBERT, pooling, activation): enum values as int32
                ("architecture", c_int32), ("pooling", c_int32), ("activation", c_int32)]


class IndexInfo(ctypes.Structure):  # splade_index_info (include/splade/index.h)
    _fields_ = [("n_docs", c_uint32), ("n_terms", c_uint32), ("n_postings", c_uint64), ("n_blocks", c_uint64),
                ("doc_scale", c_float), ("fingerprint", c_uint64), ("flags", c_uint32), ("max_length", c_int32),
                ("n_truncated", c_uint32), ("build_time", c_uint64), ("model_name", c_char_p),
                ("model_dir", c_char_p), ("file_bytes", c_uint64)]


class BuildStats(ctypes.Structure):  # splade_build_stats (include/splade/index.h)
    _fields_ = [("n_docs", c_uint32), ("n_postings", c_uint64), ("n_terms_used", c_uint32),
                ("n_truncated", c_uint32), ("file_bytes", c_uint64), ("invert_s", c_double),
                ("write_s", c_double), ("reorder_s", c_double), ("scatter_s", c_double),
                ("encode_s", c_double), ("verify_s", c_double)]


class AddOpts(ctypes.Structure):  # splade_add_opts (include/splade/segments.h)
    _fields_ = [("update", c_int), ("no_merge", c_int), ("max_segments", c_int), ("threads", c_int)]


class AddStats(ctypes.Structure):  # splade_add_stats (include/splade/segments.h)
    _fields_ = [("n_added", c_uint32), ("n_replaced", c_uint32), ("n_postings", c_uint64), ("clipped", c_uint64),
                ("generation", c_uint64), ("n_merged", c_int), ("segment", ctypes.c_char * 64),
                ("build", BuildStats)]


class DeleteStats(ctypes.Structure):  # splade_delete_stats (include/splade/segments.h)
    _fields_ = [("n_deleted", c_uint32), ("n_unknown", c_uint32), ("unknown", ctypes.c_char * 256),
                ("generation", c_uint64)]


class MergeStats(ctypes.Structure):  # splade_merge_stats (include/splade/segments.h)
    _fields_ = [("n_merged", c_int), ("n_docs", c_uint32), ("n_dropped", c_uint32), ("bytes_in", c_uint64),
                ("bytes_out", c_uint64), ("generation", c_uint64), ("segment", ctypes.c_char * 64)]


class MergeOpts(ctypes.Structure):  # splade_merge_opts (include/splade/segments.h)
    _fields_ = [("max_segments", c_int), ("threads", c_int), ("cancel", c_void_p)]


class SegmentInfo(ctypes.Structure):  # splade_segment_info (include/splade/segments.h)
    _fields_ = [("file", c_char_p), ("n_docs", c_uint32), ("n_deleted", c_uint32), ("n_postings", c_uint64),
                ("bytes", c_uint64), ("clipped", c_uint64), ("seq_base", c_uint64), ("deletions", c_char_p)]


class Qvec(ctypes.Structure):  # splade_qvec (include/splade/query.h)
    _fields_ = [("n", c_int32), ("terms", POINTER(c_int32)), ("impacts", POINTER(ctypes.c_uint8)),
                ("query_max", c_float)]


class Hit(ctypes.Structure):  # splade_hit (include/splade/query.h)
    _fields_ = [("doc", c_uint32), ("score", c_uint32)]


class SearchOpts(ctypes.Structure):  # splade_search_opts (include/splade/query.h)
    _fields_ = [("query_cut", c_int), ("bound_factor", c_float), ("rescore", c_int), ("budget", c_int)]


IX_HAS_MODEL = 2  # SPLADE_IX_HAS_MODEL
ENCODE_CHUNK = 256  # SPLADE_ENCODE_CHUNK: texts per encoder call of `splade-index encode`
ALGO_AUTO = 6     # SPLADE_ALGO_AUTO, the CLI's default (bench/results/query-2026-11-25.md)
DEVICE_CPU, DEVICE_CUDA = 1, 2

P = POINTER
_SIGNATURES = {
    # name: (restype, argtypes)
    "splade_version": (c_char_p, []),
    "splade_strerror": (c_char_p, [c_int]),
    "splade_error_detail": (c_char_p, []),
    "splade_clear_error": (None, []),
    "splade_model_resolve": (c_int, [c_char_p, P(ModelPaths), c_char_p, c_size_t]),
    "splade_builder_set_build_time": (None, [c_void_p, c_uint64]),
    "splade_model_load": (c_int, [c_char_p, P(c_void_p)]),  # splade_model is opaque: accessors below
    "splade_model_free": (None, [c_void_p]),
    "splade_model_config": (P(Config), [c_void_p]),
    "splade_model_tokenizer": (c_void_p, [c_void_p]),
    "splade_model_fingerprint": (c_uint64, [c_void_p]),
    "splade_model_dir": (c_char_p, [c_void_p]),
    "splade_model_has_query_table": (c_int, [c_void_p]),
    "splade_model_query_vector": (c_int, [c_void_p, c_char_p, c_size_t, c_int32, P(Sparse)]),
    "splade_parse_device": (c_int, [c_char_p, P(c_int)]),
    "splade_parse_devices": (c_int, [c_char_p, P(EncoderOpts)]),
    "splade_parse_precision": (c_int, [c_char_p, P(c_int)]),
    "splade_parse_cpu_precision": (c_int, [c_char_p, P(c_int)]),
    "splade_encoder_opts_init": (None, [P(EncoderOpts)]),
    "splade_encoder_create": (c_int, [c_void_p, P(EncoderOpts), P(c_void_p)]),
    "splade_encoder_encode_chunked": (c_int, [c_void_p, c_void_p, c_void_p, c_int, c_int, c_void_p, P(c_int)]),
    "splade_encoder_max_length": (c_int32, [c_void_p]),
    "splade_encoder_device": (c_int, [c_void_p]),
    "splade_encoder_free": (None, [c_void_p]),
    "splade_sparse_free": (None, [c_void_p]),
    "splade_sparse_from_pairs": (c_int, [c_void_p, c_void_p, c_int32, c_int32, P(Sparse)]),
    "splade_tokenize": (c_int, [c_void_p, c_char_p, c_size_t, c_int32, c_void_p, P(c_int32)]),
    "splade_tokenizer_token": (c_void_p, [c_void_p, c_int32]),
    "splade_ingest_opts_init": (None, [P(IngestOpts)]),
    "splade_ingest_corpus": (c_int, [c_void_p, c_char_p, c_void_p, c_int, P(IngestOpts)]),
    "splade_builder_create": (c_int, [c_void_p, c_int32, c_void_p, P(c_void_p)]),
    "splade_builder_create_for_model": (c_int, [c_void_p, c_char_p, c_int32, P(c_void_p)]),
    "splade_builder_add_doc": (c_int, [c_void_p, c_char_p, c_void_p, c_void_p, c_void_p, c_long, P(c_uint32)]),
    "splade_builder_set_vector": (c_int, [c_void_p, c_uint32, c_void_p, c_void_p, c_int32]),
    "splade_builder_keep_order": (None, [c_void_p, c_int]),
    "splade_builder_set_threads": (None, [c_void_p, c_int]),
    "splade_builder_add_truncated": (None, [c_void_p, c_uint32]),
    "splade_builder_write": (c_int, [c_void_p, c_char_p, P(BuildStats)]),
    "splade_builder_free": (None, [c_void_p]),
    "splade_builder_lock": (c_int, [c_void_p, c_char_p]),
    "splade_builder_set_cancel": (None, [c_void_p, c_void_p]),
    "splade_query_encode_opts_init": (None, [P(QueryEncodeOpts)]),
    "splade_index_load_model": (c_int, [c_void_p, P(QueryEncodeOpts), P(c_void_p)]),
    "splade_index_open": (c_int, [c_char_p, P(c_void_p)]),
    "splade_index_close": (None, [c_void_p]),
    "splade_index_get_info": (P(IndexInfo), [c_void_p]),
    "splade_index_doc_id": (c_void_p, [c_void_p, c_uint32, P(c_size_t)]),
    "splade_index_doc_text": (None, [c_void_p, c_uint32, P(c_char_p), P(c_char_p)]),
    "splade_index_term": (c_void_p, [c_void_p, c_int32, P(c_size_t)]),
    "splade_index_prepare_lookup": (c_int, [c_void_p]),
    "splade_qvec_build": (c_int, [c_void_p, c_void_p, c_int32, c_uint32, c_void_p]),
    "splade_qvec_free": (None, [c_void_p]),
    "splade_builder_set_memory": (c_int, [c_void_p, c_char_p, c_uint64, c_int]),
    "splade_add_opts_init": (None, [P(AddOpts)]),
    "splade_index_add": (c_int, [c_void_p, c_char_p, P(AddOpts), P(AddStats)]),
    "splade_index_delete": (c_int, [c_char_p, P(c_char_p), c_size_t, c_int, P(DeleteStats)]),
    "splade_merge_opts_init": (None, [P(MergeOpts)]),
    "splade_index_merge_opts": (c_int, [c_char_p, P(MergeOpts), P(MergeStats)]),
    "splade_index_segment_count": (c_int, [c_void_p]),
    "splade_index_segment_info": (c_int, [c_void_p, c_int, P(SegmentInfo)]),
    "splade_index_generation": (c_uint64, [c_void_p]),
    "splade_search_batch": (c_int, [c_void_p, c_void_p, c_int, c_int, c_int, c_int, c_void_p, c_void_p]),
    "splade_search_batch_opts": (c_int, [c_void_p, c_void_p, c_int, c_int, c_int, POINTER(SearchOpts), c_int,
                                         c_void_p, c_void_p]),
    "splade_search_calibrate": (c_int, [c_void_p, c_void_p, c_int, c_int, ctypes.c_double, c_int, POINTER(SearchOpts),
                                        POINTER(ctypes.c_double)]),
    "splade_gpu_searcher_create": (c_int, [c_void_p, c_int, P(c_void_p)]),
    "splade_gpu_searcher_free": (None, [c_void_p]),
    "splade_gpu_search_batch": (c_int, [c_void_p, c_void_p, c_int, c_int, c_void_p, c_void_p]),
}
for _name, (_res, _args) in _SIGNATURES.items():
    _f = getattr(lib, _name)
    _f.restype, _f.argtypes = _res, _args


def check(rc):
    """Raises the SpladeError subclass of a negative status, with splade_error_detail()'s text.

    Call it right after the C call, on the same thread: the detail is thread-local in C and the next
    failure on this thread replaces it (a call run on a worker thread is checked there: _call.py)."""
    if rc < 0:
        detail = (lib.splade_error_detail() or b"").decode("utf-8", "replace")
        raise_for_status(rc, lib.splade_strerror(rc).decode(), detail)
    return rc


def version():
    """Version of the library actually loaded."""
    return lib.splade_version().decode()
