/* Loading a Hugging Face BERT masked-LM folder into splade_model (fp32 host memory).
 * F32 tensors are used in place inside the read-only mapping; F16/BF16 are converted. */
#include "splade.h"
#include "splade/model.h"
#include "splade/tokenizer.h"
#include "encoder/safetensors.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    st_file st;
    float **owned;  /* converted tensors */
    int n_owned;
} model_storage;

typedef struct {
    char name[128];  /* without the optional "bert." prefix */
    int64_t rows, cols;  /* cols == 0: 1-D tensor of `rows` */
    float **dst;
    int optional;
} tensor_spec;


static void spec(tensor_spec *s, int *n, float **dst, int64_t rows, int64_t cols, const char *fmt, int layer)
{
    snprintf(s[*n].name, sizeof s[*n].name, fmt, layer);
    s[*n].rows = rows;
    s[*n].cols = cols;
    s[*n].dst = dst;
    s[*n].optional = 0;
    (*n)++;
}

/* LayerNorm parameters are "weight"/"bias" in new checkpoints, "gamma"/"beta" in old ones. */
#define LN(g, b, prefix, l)                                                     \
    do {                                                                        \
        spec(s, &n, g, H, 0, prefix ".LayerNorm.weight", l);                    \
        spec(s, &n, b, H, 0, prefix ".LayerNorm.bias", l);                      \
    } while (0)

static int layer_specs(splade_model *m, tensor_spec *s, int n, int l)
{
    const int64_t H = m->cfg.hidden_size, I = m->cfg.intermediate_size;
    splade_layer *L = &m->layers[l];
    spec(s, &n, &L->q_w, H, H, "encoder.layer.%d.attention.self.query.weight", l);
    spec(s, &n, &L->q_b, H, 0, "encoder.layer.%d.attention.self.query.bias", l);
    spec(s, &n, &L->k_w, H, H, "encoder.layer.%d.attention.self.key.weight", l);
    spec(s, &n, &L->k_b, H, 0, "encoder.layer.%d.attention.self.key.bias", l);
    spec(s, &n, &L->v_w, H, H, "encoder.layer.%d.attention.self.value.weight", l);
    spec(s, &n, &L->v_b, H, 0, "encoder.layer.%d.attention.self.value.bias", l);
    spec(s, &n, &L->attn_out_w, H, H, "encoder.layer.%d.attention.output.dense.weight", l);
    spec(s, &n, &L->attn_out_b, H, 0, "encoder.layer.%d.attention.output.dense.bias", l);
    LN(&L->ln1_g, &L->ln1_b, "encoder.layer.%d.attention.output", l);
    spec(s, &n, &L->ffn_in_w, I, H, "encoder.layer.%d.intermediate.dense.weight", l);
    spec(s, &n, &L->ffn_in_b, I, 0, "encoder.layer.%d.intermediate.dense.bias", l);
    spec(s, &n, &L->ffn_out_w, H, I, "encoder.layer.%d.output.dense.weight", l);
    spec(s, &n, &L->ffn_out_b, H, 0, "encoder.layer.%d.output.dense.bias", l);
    LN(&L->ln2_g, &L->ln2_b, "encoder.layer.%d.output", l);
    return n;
}

static int build_specs(splade_model *m, tensor_spec *s)
{
    const splade_config *c = &m->cfg;
    const int64_t H = c->hidden_size, V = c->vocab_size;
    int n = 0;
    spec(s, &n, &m->word_emb, V, H, "embeddings.word_embeddings.weight", 0);
    spec(s, &n, &m->pos_emb, c->max_position, H, "embeddings.position_embeddings.weight", 0);
    spec(s, &n, &m->type_emb, c->type_vocab_size, H, "embeddings.token_type_embeddings.weight", 0);
    LN(&m->emb_ln_g, &m->emb_ln_b, "embeddings", 0);
    for (int l = 0; l < c->num_layers; l++)
        n = layer_specs(m, s, n, l);
    spec(s, &n, &m->mlm_dense_w, H, H, "cls.predictions.transform.dense.weight", 0);
    spec(s, &n, &m->mlm_dense_b, H, 0, "cls.predictions.transform.dense.bias", 0);
    LN(&m->mlm_ln_g, &m->mlm_ln_b, "cls.predictions.transform", 0);
    spec(s, &n, &m->decoder_w, V, H, "cls.predictions.decoder.weight", 0);
    s[n - 1].optional = c->tie_word_embeddings;
    spec(s, &n, &m->decoder_b, V, 0, "cls.predictions.bias", 0);
    return n;
}

/* Finds `name` as written, with the "bert." prefix, and under LayerNorm's old names. */
static const st_tensor *find_tensor(const st_file *st, const char *name)
{
    char buf[160], alt[160];
    snprintf(alt, sizeof alt, "%s", name);
    size_t len = strlen(alt);
    if (len > 16 && strstr(alt, "LayerNorm.weight") == alt + len - 16)
        strcpy(alt + len - 6, "gamma");
    else if (len > 14 && strstr(alt, "LayerNorm.bias") == alt + len - 14)
        strcpy(alt + len - 4, "beta");
    const char *cands[2] = {name, alt};
    for (int i = 0; i < 2; i++) {
        const st_tensor *t = st_find(st, cands[i]);
        snprintf(buf, sizeof buf, "bert.%s", cands[i]);
        if (!t)
            t = st_find(st, buf);
        if (t)
            return t;
    }
    if (!strcmp(name, "cls.predictions.bias"))
        return st_find(st, "cls.predictions.decoder.bias");
    return NULL;
}

static int check_tensor(const st_file *st, const st_tensor *t, const tensor_spec *s)
{
    if (t->dtype == ST_OTHER)
        return splade_fail(SPLADE_ERR_MODEL, "%s: tensor '%s' has dtype %s: expected F32, F16 or BF16",
                           st->path, t->name, t->dtype_name);
    int want_ndim = s->cols ? 2 : 1;
    if (t->ndim != want_ndim || t->shape[0] != s->rows || (s->cols && t->shape[1] != s->cols)) {
        char got[64] = "", want[64];
        for (int i = 0; i < t->ndim && strlen(got) < 40; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? ", " : "",
                     (long long)t->shape[i]);
        if (s->cols)
            snprintf(want, sizeof want, "%lld, %lld", (long long)s->rows, (long long)s->cols);
        else
            snprintf(want, sizeof want, "%lld", (long long)s->rows);
        return splade_fail(SPLADE_ERR_MODEL, "%s: tensor '%s' has shape [%s], config.json implies [%s]",
                           st->path, t->name, got, want);
    }
    return SPLADE_OK;
}

static int bind_tensor(model_storage *ms, const st_tensor *t, float **dst)
{
    size_t n = t->nbytes / (t->dtype == ST_F32 ? 4 : 2);
    if (t->dtype == ST_F32 && ((uintptr_t)t->data & 3) == 0) {
        *dst = (float *)(uintptr_t)t->data; /* read-only mapping; nothing writes weights */
        return SPLADE_OK;
    }
    float *buf = malloc((n ? n : 1) * sizeof *buf);
    if (!buf)
        return splade_fail(SPLADE_ERR_NOMEM, "%s: tensor '%s'", ms->st.path, t->name);
    st_to_f32(t, buf, n);
    ms->owned[ms->n_owned++] = buf;
    *dst = buf;
    return SPLADE_OK;
}

static int load_tensors(splade_model *m, model_storage *ms)
{
    size_t max_specs = 16 + 16 * (size_t)m->cfg.num_layers;
    tensor_spec *s = malloc(max_specs * sizeof *s);
    ms->owned = calloc(max_specs, sizeof *ms->owned);
    if (!s || !ms->owned) {
        free(s);
        return splade_fail(SPLADE_ERR_NOMEM, "tensor table");
    }
    int n = build_specs(m, s), rc = SPLADE_OK;
    for (int i = 0; i < n && !rc; i++) {
        const st_tensor *t = find_tensor(&ms->st, s[i].name);
        if (!t) {
            if (!s[i].optional)
                rc = splade_fail(SPLADE_ERR_MODEL, "%s: missing tensor '%s%s'", ms->st.path,
                                 strncmp(s[i].name, "cls.", 4) ? "bert." : "", s[i].name);
            continue;
        }
        rc = check_tensor(&ms->st, t, &s[i]);
        if (!rc)
            rc = bind_tensor(ms, t, s[i].dst);
    }
    free(s);
    if (!rc && !m->decoder_w)
        m->decoder_w = m->word_emb; /* tied: the decoder is the word embedding matrix */
    return rc;
}

/* --- tokenizer_config.json, vocab, fingerprint --------------------------------------- */

static int read_lowercase(const char *dir, bool *lower)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    *lower = true;
    FILE *f = fopen(path, "rb");
    if (!f)
        return SPLADE_OK; /* optional: BERT uncased defaults */
    fclose(f);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%d: malformed JSON: %s", path, err.line,
                           root ? "not an object" : err.text);
    }
    json_t *v = json_object_get(root, "do_lower_case");
    int rc = SPLADE_OK;
    if (v && !json_is_boolean(v))
        rc = splade_fail(SPLADE_ERR_FORMAT, "%s: field 'do_lower_case' is not a boolean", path);
    else if (v)
        *lower = json_is_true(v);
    json_decref(root);
    return rc;
}

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

/* FNV-1a over 8-byte little-endian words (then the tail bytes): as stable as byte-wise FNV
 * but ~8x faster on a 440 MB checkpoint. */
static uint64_t fnv_words(uint64_t h, const uint8_t *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * FNV_PRIME;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

static int hash_file(const char *path, uint64_t *h)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return splade_fail(SPLADE_ERR_NOT_FOUND, "%s: cannot open", path);
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        *h = fnv_words(*h, buf, n);
    int bad = ferror(f);
    fclose(f);
    return bad ? splade_fail(SPLADE_ERR_IO, "%s: read error", path) : SPLADE_OK;
}

static int load_vocab(splade_model *m, const char *dir, const model_storage *ms)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    uint64_t h = fnv_words(FNV_OFFSET, ms->st.map, ms->st.size);
    int rc = hash_file(path, &h);
    if (rc)
        return rc;
    uint8_t lower = m->cfg.do_lower_case;
    m->fingerprint = fnv_words(h, &lower, 1);
    rc = splade_tokenizer_load(path, m->cfg.do_lower_case, &m->tokenizer);
    if (rc)
        return rc;
    int32_t nv = splade_tokenizer_vocab_size(m->tokenizer);
    if (nv > m->cfg.vocab_size)
        return splade_fail(SPLADE_ERR_MODEL, "%s: %d tokens but config.json vocab_size is %d", path,
                           nv, m->cfg.vocab_size);
    return SPLADE_OK;
}

static int load_all(splade_model *m, const char *dir, model_storage *ms)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    int rc = splade_config_load(path, &m->cfg);
    if (!rc)
        rc = read_lowercase(dir, &m->cfg.do_lower_case);
    if (rc)
        return rc;
    m->layers = calloc((size_t)m->cfg.num_layers, sizeof *m->layers);
    if (!m->layers)
        return splade_fail(SPLADE_ERR_NOMEM, "%s: layers", dir);
    char *st_path = malloc(strlen(dir) + 32);
    if (!st_path)
        return splade_fail(SPLADE_ERR_NOMEM, "%s", dir);
    sprintf(st_path, "%s/model.safetensors", dir);
    ms->st.path = st_path;
    rc = st_open(st_path, &ms->st);
    ms->st.path = st_path; /* st_open clears the struct on failure */
    if (!rc)
        rc = load_tensors(m, ms);
    if (!rc)
        rc = load_vocab(m, dir, ms);
    return rc;
}

int splade_model_load(const char *dir, splade_model **out)
{
    if (!dir || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_model_load: NULL argument");
    *out = NULL;
    splade_model *m = calloc(1, sizeof *m);
    model_storage *ms = calloc(1, sizeof *ms);
    if (!m || !ms || !(m->dir = strdup(dir))) {
        free(m);
        free(ms);
        return splade_fail(SPLADE_ERR_NOMEM, "model %s", dir);
    }
    m->storage_ = ms;
    int rc = load_all(m, dir, ms);
    if (rc) {
        splade_model_free(m);
        return rc;
    }
    *out = m;
    return SPLADE_OK;
}

void splade_model_free(splade_model *m)
{
    if (!m)
        return;
    model_storage *ms = m->storage_;
    if (ms) {
        for (int i = 0; i < ms->n_owned; i++)
            free(ms->owned[i]);
        free(ms->owned);
        char *path = (char *)ms->st.path;
        st_close(&ms->st);
        free(path);
        free(ms);
    }
    if (m->tokenizer)
        splade_tokenizer_free(m->tokenizer);
    free(m->layers);
    free(m->dir);
    free(m);
}
