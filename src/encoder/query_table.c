/* The query table of an inference-free ("doc-only") model: one weight per vocabulary row, read
 * from idf.json (OpenSearch: {token: weight}) or from a sentence-transformers
 * SparseStaticEmbedding module (model.safetensors, tensor "weight" [vocab_size]). A query's vector
 * is then its distinct tokens (no [CLS]/[SEP]) weighted by the table: no forward pass. */
#include "common/fail.h"
#include "encoder/model_files.h"
#include "encoder/model_internal.h"
#include "encoder/safetensors.h"
#include "splade.h"
#include "splade/model.h"
#include "splade/sparse.h"
#include "splade/tokenizer.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of the White_Space code point ending s[0..n), or 0 (Rust's char::is_whitespace). */
static size_t trailing_space(const char *s, size_t n)
{
    static const char *ws[] = {"\xC2\x85", "\xC2\xA0", "\xE1\x9A\x80", "\xE2\x80\xA8", "\xE2\x80\xA9",
                               "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80"};
    if (n && strchr(" \t\n\v\f\r", s[n - 1]))
        return 1;
    if (n >= 3 && !memcmp(s + n - 3, "\xE2\x80", 2) && (unsigned char)s[n - 1] >= 0x80 &&
        (unsigned char)s[n - 1] <= 0x8A)
        return 3; /* U+2000..U+200A */
    for (size_t i = 0; i < sizeof ws / sizeof *ws; i++) {
        size_t k = strlen(ws[i]);
        if (n >= k && !memcmp(s + n - k, ws[i], k))
            return k;
    }
    return 0;
}

/* The id of an idf.json token. A token the vocabulary lacks is looked up once more without its
 * trailing white space: the `tokenizers` library strips it when it reads vocab.txt, so a
 * tokenizer.json holds "" and "##" where vocab.txt (and the idf.json written from it) has
 * "\u2028" and "##\u2028" (bert-base-multilingual-uncased, ids 1279 and 97158). */
static int32_t idf_token_id(const splade_tokenizer *t, const char *tok)
{
    int32_t id = splade_tokenizer_id(t, tok);
    size_t n = strlen(tok), k, cut = n;
    while ((k = trailing_space(tok, cut)) > 0)
        cut -= k;
    if (id >= 0 || cut == n || cut > 255)
        return id;
    char buf[256];
    memcpy(buf, tok, cut);
    buf[cut] = '\0';
    return splade_tokenizer_id(t, buf);
}

static int idf_entry(splade_model *m, const char *path, const char *tok, json_t *v)
{
    int32_t id = idf_token_id(m->tokenizer, tok);
    if (!json_is_number(v))
        return splade_fail(SPLADE_ERR_FORMAT, "%s: the weight of token \"%s\" is not a number", path, tok);
    if (id < 0)
        return splade_fail(SPLADE_ERR_MODEL, "%s: token \"%s\" is not in the model's vocabulary (vocab.txt): the "
                           "query table and the model disagree", path, tok);
    double w = json_number_value(v);
    if (!isfinite(w) || w < 0)
        return splade_fail(SPLADE_ERR_FORMAT, "%s: token \"%s\" has weight %g (must be finite and >= 0)", path, tok, w);
    m->query_w[id] = (float)w;
    return SPLADE_OK;
}

static int load_idf_json(splade_model *m, const char *path)
{
    json_t *root;
    int rc = splade_json_load(path, SPLADE_MAX_VOCAB_BYTES, &root);
    if (rc)
        return rc;
    if (!json_is_object(root)) {
        json_decref(root);
        return splade_fail(SPLADE_ERR_FORMAT, "%s:1: not a JSON object of token weights", path);
    }
    const char *tok;
    json_t *v;
    json_object_foreach(root, tok, v) {
        if ((rc = idf_entry(m, path, tok, v)))
            break;
    }
    json_decref(root);
    return rc;
}

/* The query module's vocab.txt must be the document model's: the table is indexed by its ids. */
static int same_vocab(const splade_model *m, const char *qdir, const char *model_dir)
{
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/vocab.txt", qdir);
    snprintf(b, sizeof b, "%s/vocab.txt", model_dir);
    char *x, *y;
    size_t nx, ny;
    if (splade_read_regular(a, SPLADE_MAX_VOCAB_BYTES, &x, &nx))
        return SPLADE_OK; /* tokenizer.json only: nothing to compare; the table's length is checked */
    int rc = splade_read_regular(b, SPLADE_MAX_VOCAB_BYTES, &y, &ny);
    if (!rc) {
        if (nx != ny || memcmp(x, y, nx))
            rc = splade_fail(SPLADE_ERR_MODEL, "%s differs from %s: the query module's tokenizer is not the document "
                             "model's", a, b);
        free(y);
    } else if (rc == SPLADE_ERR_NOT_FOUND) {
        rc = SPLADE_OK; /* the document model's vocabulary is in its tokenizer.json: the length check remains */
    }
    free(x);
    (void)m;
    return rc;
}

static int load_static(splade_model *m, const char *path)
{
    st_file st;
    int rc = st_open(path, &st);
    if (rc)
        return rc;
    const st_tensor *t = st_find(&st, "weight");
    if (!t)
        rc = splade_fail(SPLADE_ERR_MODEL, "%s: missing tensor 'weight' (the query table)", path);
    else if (t->dtype == ST_OTHER || t->ndim != 1 || t->shape[0] != m->cfg.vocab_size)
        rc = splade_fail(SPLADE_ERR_MODEL, "%s: tensor 'weight' must be F32/F16/BF16 [%d] (config.json vocab_size); "
                         "it is %s with %lld elements in %d dimension%s", path, m->cfg.vocab_size, t->dtype_name,
                         (long long)(t->ndim ? t->shape[0] : 0), t->ndim, t->ndim == 1 ? "" : "s");
    else
        st_to_f32(t, m->query_w, (size_t)m->cfg.vocab_size);
    for (int32_t i = 0; !rc && i < m->cfg.vocab_size; i++)
        if (!isfinite(m->query_w[i]) || m->query_w[i] < 0)
            rc = splade_fail(SPLADE_ERR_MODEL, "%s: query weight %d is %g (must be finite and >= 0)", path, i,
                             (double)m->query_w[i]);
    st_close(&st);
    return rc;
}

int splade_query_table_load(splade_model *m, int kind, const char *path, const char *qdir, const char *model_dir)
{
    m->query_w = calloc((size_t)m->cfg.vocab_size, sizeof *m->query_w);
    if (!m->query_w)
        return splade_fail(SPLADE_ERR_NOMEM, "%s: query table", path);
    int rc = kind == 1 ? load_idf_json(m, path) : same_vocab(m, qdir, model_dir);
    if (!rc && kind != 1)
        rc = load_static(m, path);
    return rc;
}

int splade_model_has_query_table(const splade_model *m) { return m && m->query_w != NULL; }

uint64_t splade_model_query_table_fingerprint(const splade_model *m) { return m ? m->query_fp : 0; }

/* Distinct tokens of the text, without [CLS]/[SEP] (as SparseStaticEmbedding tokenizes), the first
 * max_len pieces; each weighted by the table, zero weights dropped; ascending term ids. */
int splade_model_query_vector(const splade_model *m, const char *text, size_t len, int32_t max_len,
                              splade_sparse *out)
{
    if (!m || !out || (!text && len) || max_len < 1)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_model_query_vector: bad arguments");
    memset(out, 0, sizeof *out);
    if (!m->query_w)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "model %s has no query table (idf.json or a sentence-transformers "
                           "SparseStaticEmbedding query module): it encodes queries with the forward pass", m->dir);
    int32_t cap = max_len + 2, n = 0;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids)
        return splade_fail(SPLADE_ERR_NOMEM, "query of %zu bytes", len);
    int rc = splade_tokenize(m->tokenizer, text ? text : "", len, cap, ids, &n);
    /* sort the pieces (between [CLS] and [SEP]) and keep each id once */
    int32_t k = 0;
    for (int32_t i = 1; !rc && i + 1 < n; i++) {
        int32_t id = ids[i], j = k;
        while (j > 0 && ids[j - 1] > id) /* insertion sort in place over ids[0..k): queries are short */
            j--;
        if (j > 0 && ids[j - 1] == id)
            continue;
        memmove(ids + j + 1, ids + j, (size_t)(k - j) * sizeof *ids);
        ids[j] = id;
        k++;
    }
    int32_t *terms = rc ? NULL : malloc(((size_t)k + 1) * sizeof *terms);
    float *w = rc ? NULL : malloc(((size_t)k + 1) * sizeof *w);
    if (!rc && (!terms || !w))
        rc = splade_fail(SPLADE_ERR_NOMEM, "query vector of %d terms", k);
    int32_t nz = 0;
    for (int32_t i = 0; !rc && i < k; i++)
        if (m->query_w[ids[i]] > 0.0f) {
            terms[nz] = ids[i];
            w[nz++] = m->query_w[ids[i]];
        }
    free(ids);
    if (rc) {
        free(terms), free(w);
        return rc;
    }
    *out = (splade_sparse){.n = nz, .terms = terms, .weights = w};
    return SPLADE_OK;
}
