/* Query sets from text, encoded with the model the index was built with (include/splade/pipeline.h).
 * The model is found from the index's record (absolute folder, else its name through the usual
 * resolution) unless the caller overrides it; its fingerprint must match the index's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fail.h"
#include "query/query_ids.h"
#include "splade.h"
#include "splade/pipeline.h"
#include "splade/corpus.h"
#include "splade/encoder.h"
#include "splade/query_input.h"

static int find_model(const splade_index_info *in, const splade_query_encode_opts *o, char *dir, size_t n)
{
    struct stat st;
    const char *override = o ? o->model : NULL;
    const splade_model_paths *paths = o ? o->model_paths : NULL;
    if (override)
        return splade_model_resolve(override, paths, dir, n);
    if (*in->model_dir && stat(in->model_dir, &st) == 0 && S_ISDIR(st.st_mode))
        return snprintf(dir, n, "%s", in->model_dir) < (int)n ? SPLADE_OK
                                                               : splade_fail(SPLADE_ERR_INVALID_ARG, "path too long");
    int rc = splade_model_resolve(*in->model_name ? in->model_name : NULL, paths, dir, n);
    if (rc == SPLADE_ERR_NOT_FOUND) { /* say that the name came from the index, not from an option */
        char why[1024];
        snprintf(why, sizeof why, "%s", splade_error_detail());
        rc = splade_fail(rc, "the index's model is gone (it records folder \"%s\" and name \"%s\"): %s; or pass --model",
                         in->model_dir, in->model_name, why);
    }
    return rc;
}

/* An inference-free index (SPLADE_IX_QUERY_TABLE) needs a model with a query table, and a full-encoding
 * index one without: said plainly, before the fingerprints (which differ too). */
static int check_mode(const splade_index_info *in, const splade_model *m, const char *dir)
{
    int want = (in->flags & SPLADE_IX_QUERY_TABLE) != 0, have = splade_model_has_query_table(m);
    if (want && !have)
        return splade_fail(SPLADE_ERR_MISMATCH, "the index was built with an inference-free model (\"%s\": queries are "
                           "weighted by its query table, no forward pass) but %s has no query table (idf.json or a "
                           "sentence-transformers SparseStaticEmbedding query module): pass the model the index was "
                           "built with", in->model_name, dir);
    if (!want && have)
        return splade_fail(SPLADE_ERR_MISMATCH, "the index was built with model \"%s\", which encodes queries with the "
                           "forward pass, but %s is an inference-free model (query table %016llx): rebuild the index "
                           "with it or pass the right --model", in->model_name, dir,
                           (unsigned long long)splade_model_query_table_fingerprint(m));
    return SPLADE_OK;
}

/* Loads the index's model and checks it is the one the index was built with. */
int splade_index_load_model(const splade_index *ix, const splade_query_encode_opts *o, splade_model **m)
{
    if (!ix || !m)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_index_load_model: NULL argument");
    *m = NULL;
    const splade_index_info *in = splade_index_get_info(ix);
    if (!(in->flags & SPLADE_IX_HAS_MODEL))
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "this index was built from precomputed vectors (no model): "
                                                   "query it with --vector-queries");
    char dir[4096];
    int rc = find_model(in, o, dir, sizeof dir);
    if (rc == 0)
        rc = splade_model_load(dir, m);
    if (rc == 0 && (rc = check_mode(in, *m, dir)) != 0) {
        splade_model_free(*m);
        *m = NULL;
    }
    if (rc == 0 && splade_model_fingerprint(*m) != in->fingerprint) {
        rc = splade_fail(SPLADE_ERR_MISMATCH, "the index was built with model \"%s\" (%s, fingerprint %016llx) "
                         "but %s has fingerprint %016llx: rebuild the index or pass the right --model",
                         in->model_name, in->model_dir, (unsigned long long)in->fingerprint, dir,
                         (unsigned long long)splade_model_fingerprint(*m));
        splade_model_free(*m);
        *m = NULL;
    }
    return rc;
}

/* Inference-free models: each query from the query table (tokenizer only, no forward pass), its
 * tokens truncated at max_position_embeddings, as sentence-transformers' tokenizer does
 * (model_max_length). */
static int table_all(const splade_model *m, const char *const *texts, int n, splade_sparse *v)
{
    int rc = SPLADE_OK;
    for (int i = 0; i < n && rc == 0; i++)
        rc = splade_model_query_vector(m, texts[i], strlen(texts[i]), splade_model_config(m)->max_position, &v[i]);
    return rc;
}

/* Fills out->q[0..n), allocated by the caller: by the encoder, or (enc NULL) the model's query table. */
static int encode_all(splade_index *ix, const splade_model *m, splade_encoder *enc, const char *const *texts, int n,
                      splade_query_set *out)
{
    splade_sparse *v = calloc((size_t)n + 1, sizeof *v);
    int rc = v ? SPLADE_OK : splade_fail(SPLADE_ERR_NOMEM, "%d queries", n);
    if (rc == 0 && n)
        rc = enc ? splade_encoder_encode(enc, texts, NULL, n, v, NULL) : table_all(m, texts, n, v);
    for (int i = 0; v && i < n; i++) {
        if (rc == 0)
            rc = splade_qvec_build(v[i].terms, v[i].weights, v[i].n, splade_index_get_info(ix)->n_terms, &out->q[i]);
        splade_sparse_free(&v[i]);
    }
    free(v);
    return rc;
}

static int encode_texts(splade_index *ix, const char *const *texts, int n, const splade_query_encode_opts *o,
                        splade_query_set *out)
{
    splade_model *m = NULL;
    splade_encoder *enc = NULL;
    /* one query is fastest on the CPU: the GPU's start-up costs more than the forward pass */
    splade_encoder_opts eo = {.device = SPLADE_DEVICE_CPU, .threads = o ? o->threads : 0,
                              .max_length = splade_index_get_info(ix)->max_length, .quiet = 1,
                              .max_batch_tokens = o ? o->max_batch_tokens : 0};
    int rc = o && o->device ? splade_parse_device(o->device, &eo.device) : SPLADE_OK;
    if (rc == 0 && o && o->precision)
        rc = splade_parse_precision(o->precision, &eo.precision);
    if (rc == 0 && o && o->precision) /* the CPU computes in bf16 only when asked (issue #13) */
        rc = splade_parse_cpu_precision(o->precision, &eo.cpu_precision);
    if (rc == 0)
        rc = splade_index_load_model(ix, o, &m);
    if (rc == 0 && !splade_model_has_query_table(m))
        rc = splade_encoder_create(m, &eo, &enc);
    if (rc == 0)
        rc = encode_all(ix, m, enc, texts, n, out);
    splade_encoder_free(enc);
    splade_model_free(m);
    return rc;
}

int splade_query_set_from_texts(splade_index *ix, const char *const *texts, int n,
                                const splade_query_encode_opts *opts, splade_query_set *out)
{
    memset(out, 0, sizeof *out);
    /* both arrays exist (zeroed) before anything can fail, so splade_query_set_free() may walk all n */
    out->ids = calloc((size_t)n + 1, sizeof *out->ids);
    out->q = calloc((size_t)n + 1, sizeof *out->q);
    int rc = out->ids && out->q ? SPLADE_OK : splade_fail(SPLADE_ERR_NOMEM, "%d queries", n);
    for (int i = 0; rc == 0 && i < n; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", i + 1);
        if (!(out->ids[i] = strdup(id)))
            rc = splade_fail(SPLADE_ERR_NOMEM, "query ids");
    }
    if (rc == 0)
        rc = encode_texts(ix, texts, n, opts, out);
    out->n = out->ids && out->q ? n : 0;
    if (rc < 0)
        splade_query_set_free(out);
    return rc;
}

/* Room for one more query in ids/texts. */
static int grow(char ***ids, char ***texts, int n, int *cap)
{
    if (n < *cap)
        return SPLADE_OK;
    int c = *cap ? *cap * 2 : 256;
    char **a = realloc(*ids, (size_t)c * sizeof *a);
    if (a)
        *ids = a;
    char **b = a ? realloc(*texts, (size_t)c * sizeof *b) : NULL;
    if (b)
        *texts = b;
    if (!a || !b)
        return splade_fail(SPLADE_ERR_NOMEM, "%d queries", c);
    *cap = c;
    return SPLADE_OK;
}

/* Reads ids and texts of a queries JSONL file; a repeated id is an error naming both lines. */
static int read_queries(const char *path, char ***ids, char ***texts, int *n)
{
    splade_corpus_reader *r = NULL;
    query_ids seen;
    int rc = query_ids_init(&seen), cap = 0;
    if (rc == 0)
        rc = splade_corpus_open(path, &r);
    splade_doc d;
    while (rc == 0 && (rc = splade_corpus_next(r, &d)) == 1) {
        rc = query_ids_add(&seen, path, d.id, d.line);
        if (rc == 0)
            rc = grow(ids, texts, *n, &cap);
        if (rc < 0)
            break;
        (*ids)[*n] = strdup(d.id);
        (*texts)[*n] = strdup(d.text);
        (*n)++;
        rc = (*ids)[*n - 1] && (*texts)[*n - 1] ? SPLADE_OK : splade_fail(SPLADE_ERR_NOMEM, "query text");
    }
    splade_corpus_close(r);
    query_ids_free(&seen);
    return rc < 0 ? rc : SPLADE_OK;
}

int splade_query_set_from_file(splade_index *ix, const char *path, const splade_query_encode_opts *opts,
                               splade_query_set *out)
{
    memset(out, 0, sizeof *out);
    char **ids = NULL, **texts = NULL;
    int n = 0;
    int rc = read_queries(path, &ids, &texts, &n);
    if (rc == 0)
        rc = splade_query_set_from_texts(ix, (const char *const *)texts, n, opts, out);
    for (int i = 0; i < n; i++) {
        if (rc == 0) { /* keep the file's ids */
            free(out->ids[i]);
            out->ids[i] = ids[i];
        } else {
            free(ids[i]);
        }
        free(texts[i]);
    }
    free(ids);
    free(texts);
    return rc;
}

void splade_query_encode_opts_init(splade_query_encode_opts *o)
{
    *o = (splade_query_encode_opts){0}; /* NULL device: the CPU, as for one query the GPU's start-up costs more */
}
