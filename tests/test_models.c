/* The other architectures, folder layouts and modes (issue 15) against the goldens of
 * tools/make_model_goldens.py (transformers / sentence-transformers / HF tokenizers on random
 * weights of the real architectures, written by tools/make_random_model.py into cache/):
 * DistilBERT, pooling and activation read from the model, sentence-transformers folders, doc-only
 * query tables, a 105,879-term vocabulary; and the bad-input paths of each. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "splade.h"
#include "splade/encoder.h"
#include "splade/model.h"
#include "splade/tokenizer.h"
#include "model_goldens.h"
#include "tmp_dir.h"

#define TOL 1e-4

typedef struct {
    const char *model_dir, *golden;
} gcase;

static splade_model *load_case(const gcase *c, gv_file *gf)
{
    if (access(c->model_dir, R_OK) != 0) {
        printf("SKIP: %s absent (make models)\n", c->model_dir);
        return NULL;
    }
    assert_int_equal(gv_load(c->golden, gf), 0);
    mg_check_sha(c->model_dir, gf, c->golden);
    splade_model *m;
    if (splade_model_load(c->model_dir, &m))
        fail_msg("load %s: %s", c->model_dir, splade_error_detail());
    return m;
}

/* The golden's token ids through the forward (no tokenizer), then the texts (tokenizer too). */
static void run_document(const gcase *c)
{
    gv_file gf;
    splade_model *m = load_case(c, &gf);
    if (!m)
        skip();
    int32_t *off = malloc((size_t)(gf.n + 1) * sizeof *off), total = 0;
    for (int i = 0; i < gf.n; i++)
        total += gf.g[i].n_ids;
    int32_t *ids = malloc((size_t)total * sizeof *ids);
    const char **texts = malloc((size_t)gf.n * sizeof *texts);
    off[0] = 0;
    for (int i = 0; i < gf.n; i++) {
        memcpy(ids + off[i], gf.g[i].ids, (size_t)gf.g[i].n_ids * sizeof *ids);
        off[i + 1] = off[i] + gf.g[i].n_ids;
        texts[i] = gf.g[i].text;
    }
    splade_sparse *v = calloc((size_t)gf.n, sizeof *v);
    splade_encoder *e = mg_cpu_encoder(m, gf.max_length);
    assert_int_equal(splade_encoder_encode_ids(e, ids, off, gf.n, v), SPLADE_OK);
    double w_ids = mg_worst(&gf, v, TOL);
    mg_check_golden_ids(m, &gf); /* the model's tokenizer must give HF's ids for every text */
    int cut = -1;
    assert_int_equal(splade_encoder_encode(e, texts, NULL, gf.n, v, &cut), SPLADE_OK);
    double w_text = mg_worst(&gf, v, TOL);
    printf("  %s: %d texts, max |diff| vs reference %.2e (ids) %.2e (text)\n", c->golden, gf.n, w_ids, w_text);
    assert_true(w_ids <= TOL && w_text <= TOL);
    splade_encoder_free(e);
    free(v), free(ids), free(off), free(texts);
    splade_model_free(m);
    gv_free(&gf);
}

static void test_distilbert(void **s)
{
    (void)s;
    static const gcase c = {"cache/rand-distilbert", "tests/data/models/rand-distilbert.jsonl"};
    run_document(&c);
    splade_model *m;
    assert_int_equal(splade_model_load(c.model_dir, &m), SPLADE_OK);
    const splade_config *cfg = splade_model_config(m);
    assert_int_equal(cfg->architecture, SPLADE_ARCH_DISTILBERT);
    assert_int_equal(cfg->type_vocab_size, 0);
    assert_int_equal(cfg->hidden_size, 96);
    assert_int_equal(cfg->num_layers, 2);
    assert_int_equal(cfg->intermediate_size, 192);
    splade_model_free(m);
}

/* SpladePooling "sum" with "log1p_relu" (read from 1_SpladePooling/config.json), on the CPU. */
static void test_sum_pooling(void **s)
{
    (void)s;
    static const gcase c = {"cache/rand-distil-sum", "tests/data/models/rand-distil-sum.jsonl"};
    run_document(&c);
    splade_model *m;
    assert_int_equal(splade_model_load(c.model_dir, &m), SPLADE_OK);
    assert_int_equal(splade_model_config(m)->pooling, SPLADE_POOL_SUM);
    assert_int_equal(splade_model_config(m)->activation, SPLADE_ACT_LOG1P_LOG1P_RELU);
    assert_false(splade_model_has_query_table(m));
    splade_model_free(m);
}

/* A sentence-transformers Router folder (doc-only, OpenSearch v3 style): the document route's MLM
 * transformer and SpladePooling("max", "log1p_relu"). */
static void test_router_document(void **s)
{
    (void)s;
    static const gcase c = {"cache/rand-docv3", "tests/data/models/rand-docv3.jsonl"};
    run_document(&c);
    splade_model *m;
    assert_int_equal(splade_model_load(c.model_dir, &m), SPLADE_OK);
    assert_int_equal(splade_model_config(m)->activation, SPLADE_ACT_LOG1P_LOG1P_RELU);
    assert_int_equal(splade_model_config(m)->pooling, SPLADE_POOL_MAX);
    assert_true(splade_model_has_query_table(m));
    splade_model_free(m);
}

/* A plain Hugging Face folder with idf.json (OpenSearch v2 doc-only layout): documents by the
 * forward pass with the default activation. */
static void test_plain_idf_document(void **s)
{
    (void)s;
    static const gcase c = {"cache/rand-docv2-idf", "tests/data/models/rand-docv2-idf.jsonl"};
    run_document(&c);
}

/* Query vectors from the table (no forward pass) equal sentence-transformers' encode_query
 * (SparseStaticEmbedding) and the idf.json weighting; the tokens equal HF's without specials. */
static void run_query_table(const gcase *c)
{
    gv_file gf;
    splade_model *m = load_case(c, &gf);
    if (!m)
        skip();
    assert_true(splade_model_has_query_table(m));
    assert_true(splade_model_query_table_fingerprint(m) != 0);
    int32_t *ids = malloc((size_t)(gf.max_length + 2) * sizeof *ids);
    double worst = 0.0;
    for (int i = 0; i < gf.n; i++) {
        const gv_row *g = &gf.g[i];
        int32_t n;
        assert_int_equal(splade_tokenize(splade_model_tokenizer(m), g->text, strlen(g->text), gf.max_length + 2, ids,
                                         &n), SPLADE_OK);
        if (n - 2 != g->n_ids || memcmp(ids + 1, g->ids, (size_t)g->n_ids * sizeof *ids))
            fail_msg("%s: %d pieces here, %d in HF's tokenizer (or different ids)", g->id, n - 2, g->n_ids);
        const double d = mg_query_diff(m, g, gf.max_length, 1e-6);
        worst = d > worst ? d : worst;
    }
    printf("  %s: %d queries, max |diff| %.2e\n", c->golden, gf.n, worst);
    assert_true(worst <= 1e-6);
    free(ids);
    splade_model_free(m);
    gv_free(&gf);
}

static void test_query_table_static(void **s)
{
    (void)s;
    static const gcase c = {"cache/rand-docv3", "tests/data/models/rand-docv3-query.jsonl"};
    run_query_table(&c);
}

static void test_query_table_idf(void **s)
{
    (void)s;
    static const gcase c = {"cache/rand-docv2-idf", "tests/data/models/rand-docv2-idf-query.jsonl"};
    run_query_table(&c);
}

/* A 105,879-term WordPiece vocabulary (multilingual uncased stand-in): token ids and vector
 * terms above 65,535, texts of ten scripts tokenized as HF does. */
static void test_multilingual(void **s)
{
    (void)s;
    static const gcase c = {"cache/rand-multi", "tests/data/models/rand-multi.jsonl"};
    run_document(&c);
    gv_file gf;
    assert_int_equal(gv_load(c.golden, &gf), 0);
    int high_ids = 0, high_terms = 0;
    for (int i = 0; i < gf.n; i++) {
        for (int32_t j = 0; j < gf.g[i].n_ids; j++)
            high_ids += gf.g[i].ids[j] > 65535;
        for (int32_t j = 0; j < gf.g[i].n; j++)
            high_terms += gf.g[i].terms[j] > 65535;
    }
    assert_true(high_ids > 50 && high_terms > 500); /* the test exercises ids past 16 bits */
    gv_free(&gf);
    splade_model *m;
    assert_int_equal(splade_model_load(c.model_dir, &m), SPLADE_OK);
    /* more texts, tokens only (SciFact documents and queries, the multilingual set): HF's ids */
    const int texts = mg_check_tokens(m, "tests/data/models/rand-multi-tokens.jsonl", NULL);
    assert_true(texts > 300);
    assert_int_equal(splade_model_config(m)->vocab_size, 105879);
    assert_int_equal(splade_tokenizer_vocab_size(splade_model_tokenizer(m)), 105879);
    splade_model_free(m);
}

/* The GPU encoder on the same models (DistilBERT without token types, the second log1p in the fused
 * head, V = 105,879): fp32 within 1e-4 of the reference, bf16 with cosine >= 0.99 to it; sum pooling
 * is refused on the GPU (AUTO encodes it on the CPU). Skips visibly without a GPU. */
static double gpu_case(const gcase *c, splade_precision prec)
{
    gv_file gf;
    splade_model *m = load_case(c, &gf);
    if (!m)
        return -1;
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CUDA, o.quiet = 1, o.max_length = gf.max_length, o.precision = prec;
    splade_encoder *e;
    if (splade_encoder_create(m, &o, &e))
        fail_msg("%s on the GPU: %s", c->model_dir, splade_error_detail());
    const char **texts = malloc((size_t)gf.n * sizeof *texts);
    for (int i = 0; i < gf.n; i++)
        texts[i] = gf.g[i].text;
    splade_sparse *v = calloc((size_t)gf.n, sizeof *v);
    assert_int_equal(splade_encoder_encode(e, texts, NULL, gf.n, v, NULL), SPLADE_OK);
    double worst = 0.0, min_cos = 1.0;
    for (int i = 0; i < gf.n; i++) {
        splade_sparse g = {gf.g[i].n, gf.g[i].terms, gf.g[i].w};
        double gg = splade_sparse_dot(&g, &g), vv = splade_sparse_dot(&v[i], &v[i]), gv = splade_sparse_dot(&g, &v[i]);
        double cos = gg > 0 && vv > 0 ? gv / sqrt(gg * vv) : (gg == vv ? 1.0 : 0.0);
        min_cos = cos < min_cos ? cos : min_cos;
        int32_t only;
        double d = gv_compare(&gf.g[i], &v[i], TOL, &only);
        worst = d > worst ? d : worst;
        splade_sparse_free(&v[i]);
    }
    printf("  %s on the GPU (%s): max |diff| %.2e, min cosine %.5f\n", c->golden,
           prec == SPLADE_PRECISION_FP32 ? "fp32" : "bf16", worst, min_cos);
    splade_encoder_free(e);
    free(v), free(texts);
    splade_model_free(m);
    gv_free(&gf);
    return prec == SPLADE_PRECISION_FP32 ? worst : 1.0 - min_cos;
}

static void test_gpu_models(void **s)
{
    (void)s;
    char name[256];
    if (!splade_gpu_probe(name, sizeof name)) {
        printf("SKIP: no usable GPU (%s)\n", name);
        skip();
    }
    static const gcase cases[] = {{"cache/rand-distilbert", "tests/data/models/rand-distilbert.jsonl"},
                                  {"cache/rand-docv3", "tests/data/models/rand-docv3.jsonl"},
                                  {"cache/rand-multi", "tests/data/models/rand-multi.jsonl"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double fp32 = gpu_case(&cases[i], SPLADE_PRECISION_FP32), bf16 = gpu_case(&cases[i], SPLADE_PRECISION_BF16);
        if (fp32 >= 0)
            assert_true(fp32 <= TOL && bf16 <= 0.01);
    }
    splade_model *m;
    if (splade_model_load("cache/rand-distil-sum", &m) == SPLADE_OK) {
        splade_encoder_opts o;
        splade_encoder_opts_init(&o);
        o.device = SPLADE_DEVICE_CUDA, o.quiet = 1;
        splade_encoder *e;
        assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_ERR_UNSUPPORTED);
        assert_non_null(strstr(splade_error_detail(), "SpladePooling is \"sum\""));
        o.device = SPLADE_DEVICE_AUTO;
        assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
        assert_int_equal(splade_encoder_device(e), SPLADE_DEVICE_CPU);
        splade_encoder_free(e);
        splade_model_free(m);
    }
}

/* --- bad input ------------------------------------------------------------------------ */

static void write_file(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void expect_config(const char *json, int rc, const char *needle)
{
    char p[512];
    snprintf(p, sizeof p, "%s/config.json", td_group_dir);
    write_file(td_group_dir, "config.json", json);
    splade_config c;
    int got = splade_config_load(p, &c);
    if (got != rc || !strstr(splade_error_detail(), needle))
        fail_msg("config %s: rc %d (want %d), detail '%s' (want '%s')", json, got, rc, splade_error_detail(), needle);
}

#define DISTIL "\"activation\": \"gelu\", \"dim\": 64, \"n_layers\": 1, \"n_heads\": 2, \"hidden_dim\": 128, " \
               "\"max_position_embeddings\": 512, \"vocab_size\": 30522"

static void test_config_errors(void **s)
{
    (void)s;
    expect_config("{\"model_type\": \"distilbert\", " DISTIL "}", SPLADE_OK, "");
    expect_config("{\"architectures\": [\"DistilBertForMaskedLM\"], " DISTIL "}", SPLADE_OK, "");
    expect_config("{\"model_type\": \"roberta\", " DISTIL "}", SPLADE_ERR_UNSUPPORTED,
                  "field 'model_type' is \"roberta\": unsupported architecture; supported: bert (BertForMaskedLM), "
                  "distilbert (DistilBertForMaskedLM)");
    expect_config("{\"architectures\": [\"XLMRobertaForMaskedLM\"]}", SPLADE_ERR_UNSUPPORTED,
                  "'architectures' is \"XLMRobertaForMaskedLM\": unsupported architecture; supported: bert");
    expect_config("{\"model_type\": \"distilbert\", \"architectures\": [\"DistilBertModel\"], " DISTIL "}",
                  SPLADE_ERR_UNSUPPORTED, "must be DistilBertForMaskedLM");
    /* each DistilBERT field named as config.json spells it */
    expect_config("{\"model_type\": \"distilbert\", \"activation\": \"gelu\", \"n_layers\": 1, \"n_heads\": 2, "
                  "\"hidden_dim\": 128, \"max_position_embeddings\": 512, \"vocab_size\": 30522}",
                  SPLADE_ERR_MODEL, "missing field 'dim'");
    expect_config("{\"model_type\": \"distilbert\", \"activation\": \"gelu\", \"dim\": 64, \"n_layers\": 1, "
                  "\"n_heads\": 3, \"hidden_dim\": 128, \"max_position_embeddings\": 512, \"vocab_size\": 30522}",
                  SPLADE_ERR_MODEL, "'dim' 64 is not a multiple of 'n_heads' 3");
    expect_config("{\"model_type\": \"distilbert\", \"activation\": \"relu\", \"dim\": 64, \"n_layers\": 1, "
                  "\"n_heads\": 2, \"hidden_dim\": 128, \"max_position_embeddings\": 512, \"vocab_size\": 30522}",
                  SPLADE_ERR_UNSUPPORTED, "field 'activation' is \"relu\"");
    expect_config("{\"model_type\": \"distilbert\", \"sinusoidal_pos_embds\": true, " DISTIL "}",
                  SPLADE_ERR_UNSUPPORTED, "'sinusoidal_pos_embds' must be false");
    expect_config("{\"model_type\": 3, " DISTIL "}", SPLADE_ERR_MODEL, "'model_type' is not a string");
    expect_config("{\"model_type\": \"distilbert\", \"activation\": \"gelu\", \"dim\": 64, \"n_layers\": \"1\", "
                  "\"n_heads\": 2, \"hidden_dim\": 128, \"max_position_embeddings\": 512, \"vocab_size\": 30522}",
                  SPLADE_ERR_MODEL, "field 'n_layers' is not an integer");
}

/* A DistilBERT folder whose safetensors lacks one tensor (renamed): the error names it with its prefix. */
static void test_distilbert_missing_tensor(void **s)
{
    (void)s;
    if (access("cache/rand-distilbert", R_OK) != 0)
        skip();
    char cmd[1024], dir[96];
    snprintf(dir, sizeof dir, "%s/distil", td_group_dir);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp cache/rand-distilbert/config.json cache/rand-distilbert/vocab.txt %s && "
             "python3 -c \"import json,struct,sys; f=open('cache/rand-distilbert/model.safetensors','rb'); "
             "n=struct.unpack('<Q',f.read(8))[0]; h=json.loads(f.read(n)); d=f.read(); "
             "h['distilbert.transformer.layer.1.ffn.lin2.b']=h.pop('distilbert.transformer.layer.1.ffn.lin2.bias'); "
             "b=json.dumps(h).encode(); b+=b' '*(-len(b)%%8); open('%s/model.safetensors','wb').write(struct.pack('<Q',len(b))+b+d)\"",
             dir, dir, dir);
    if (system(cmd) != 0)
        skip();
    splade_model *m;
    assert_int_equal(splade_model_load(dir, &m), SPLADE_ERR_MODEL);
    assert_non_null(strstr(splade_error_detail(), "missing tensor 'distilbert.transformer.layer.1.ffn.lin2.bias'"));
}

/* A copy of cache/SRC in td_group_dir/NAME, then `edit` run in it (sh -c); 0 when the model is absent. */
static int copy_model(const char *src, const char *name, const char *edit, char *dir, size_t n)
{
    char cmd[2048];
    snprintf(dir, n, "%s/%s", td_group_dir, name);
    if (access(src, R_OK) != 0)
        return 0;
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s' && cd '%s' && %s", dir, src, dir, dir, edit);
    assert_int_equal(system(cmd), 0);
    return 1;
}

static void expect_load(const char *src, const char *name, const char *edit, int rc, const char *needle)
{
    char dir[256];
    if (!copy_model(src, name, edit, dir, sizeof dir)) {
        printf("SKIP: %s absent (make models)\n", src);
        return;
    }
    splade_model *m = NULL;
    int got = splade_model_load(dir, &m);
    if (got != rc || !strstr(splade_error_detail(), needle))
        fail_msg("%s after '%s': rc %d (want %d), detail '%s' (want '%s')", src, edit, got, rc,
                 got ? splade_error_detail() : "", needle);
    splade_model_free(m);
}

#define PY_JSON(file, code) "python3 -c \"import json; p='" file "'; d=json.load(open(p)); " code "; json.dump(d, open(p,'w'))\""

static void test_layout_errors(void **s)
{
    (void)s;
    /* the modules disagree with config.json */
    expect_load("cache/rand-distilbert", "dim", PY_JSON("1_SpladePooling/config.json", "d['embedding_dimension']=30000"),
                SPLADE_ERR_MODEL, "field 'embedding_dimension' is 30000 but");
    expect_load("cache/rand-distilbert", "pool", PY_JSON("1_SpladePooling/config.json", "d['pooling_strategy']='mean'"),
                SPLADE_ERR_UNSUPPORTED, "1_SpladePooling/config.json: field 'pooling_strategy' is not");
    expect_load("cache/rand-distilbert", "act", PY_JSON("1_SpladePooling/config.json", "d['activation_function']='gelu'"),
                SPLADE_ERR_UNSUPPORTED, "field 'activation_function' is not \"relu\" or \"log1p_relu\"");
    expect_load("cache/rand-distilbert", "type", PY_JSON("modules.json", "d[1]['type']='x.models.Normalize'"),
                SPLADE_ERR_UNSUPPORTED, "module type \"x.models.Normalize\" is not supported");
    expect_load("cache/rand-distilbert", "nomlm", PY_JSON("modules.json", "d.pop(0)"), SPLADE_ERR_MODEL,
                "no MLM transformer module");
    expect_load("cache/rand-distilbert", "badjson", "echo '[{' > modules.json", SPLADE_ERR_FORMAT, "modules.json:");
    /* missing or mismatched query tables */
    expect_load("cache/rand-docv3", "noq", "rm query_0_SparseStaticEmbedding/model.safetensors", SPLADE_ERR_NOT_FOUND,
                "query_0_SparseStaticEmbedding/model.safetensors");
    expect_load("cache/rand-docv3", "qvocab", "echo extra >> query_0_SparseStaticEmbedding/vocab.txt", SPLADE_ERR_MODEL,
                "the query module's tokenizer is not the document model's");
    expect_load("cache/rand-docv3", "noroute", PY_JSON("router_config.json", "d['structure'].pop('document')"),
                SPLADE_ERR_MODEL, "no \"structure\".\"document\" route");
    expect_load("cache/rand-docv2-idf", "idftok", PY_JSON("idf.json", "d['zzqqxx-not-a-token']=1.0"), SPLADE_ERR_MODEL,
                "token \"zzqqxx-not-a-token\" is not in the model's vocabulary");
    expect_load("cache/rand-docv2-idf", "idfneg", PY_JSON("idf.json", "d['the']=-1"), SPLADE_ERR_FORMAT,
                "token \"the\" has weight -1");
    expect_load("cache/rand-docv2-idf", "idfstr", PY_JSON("idf.json", "d['the']='x'"), SPLADE_ERR_FORMAT,
                "the weight of token \"the\" is not a number");
    expect_load("cache/rand-docv2-idf", "idfarr", "echo '[1, 2]' > idf.json", SPLADE_ERR_FORMAT,
                "not a JSON object of token weights");
    /* a model without a table: the query-table path is refused, not silently empty */
    if (access("cache/rand-distilbert", R_OK) == 0) {
        splade_model *m;
        assert_int_equal(splade_model_load("cache/rand-distilbert", &m), SPLADE_OK);
        splade_sparse v;
        assert_int_equal(splade_model_query_vector(m, "x", 1, 16, &v), SPLADE_ERR_UNSUPPORTED);
        assert_non_null(strstr(splade_error_detail(), "has no query table"));
        splade_model_free(m);
    }
}

/* A folder with tokenizer.json and no vocab.txt (what transformers 5 saves): the same tokenizer and
 * fingerprint as with vocab.txt; a tokenizer.json that is not WordPiece, or with a repeated id, is refused. */
#define MAKE_TJ(extra) "python3 -c \"import json; t=open('vocab.txt',encoding='utf-8').read().split('\\n')[:-1]; " \
    "d={'version':'1.0','normalizer':{'type':'BertNormalizer','lowercase':True},'model':{'type':'WordPiece'," \
    "'unk_token':'[UNK]','continuing_subword_prefix':'##','vocab':{w:i for i,w in enumerate(t)}}}; " extra \
    "json.dump(d, open('tokenizer.json','w'))\" && rm vocab.txt"

static void test_tokenizer_json(void **s)
{
    (void)s;
    char dir[256];
    if (!copy_model("cache/rand-distilbert", "tj", MAKE_TJ(""), dir, sizeof dir))
        skip();
    splade_model *a, *b;
    assert_int_equal(splade_model_load("cache/rand-distilbert", &a), SPLADE_OK);
    if (splade_model_load(dir, &b))
        fail_msg("%s", splade_error_detail());
    assert_true(splade_model_fingerprint(a) == splade_model_fingerprint(b));
    const char *text = "Café naïve RÉSUMÉ — cells divide; 中文 unaffable";
    int32_t x[64], y[64], nx, ny;
    assert_int_equal(splade_tokenize(splade_model_tokenizer(a), text, strlen(text), 64, x, &nx), SPLADE_OK);
    assert_int_equal(splade_tokenize(splade_model_tokenizer(b), text, strlen(text), 64, y, &ny), SPLADE_OK);
    assert_true(nx == ny && !memcmp(x, y, (size_t)nx * sizeof *x));
    splade_model_free(a), splade_model_free(b);
    expect_load("cache/rand-distilbert", "tjbpe", MAKE_TJ("d['model']['type']='BPE'; "), SPLADE_ERR_UNSUPPORTED,
                "field 'model.type' is \"BPE\": only a WordPiece tokenizer");
    expect_load("cache/rand-distilbert", "tjdup", MAKE_TJ("d['model']['vocab']['the']=0; "), SPLADE_ERR_FORMAT,
                "field 'model.vocab': token");
    expect_load("cache/rand-distilbert", "novocab", "rm vocab.txt", SPLADE_ERR_NOT_FOUND, "vocab.txt: cannot open");
}

/* Pooling, activation and the query table enter the fingerprint: the same weights under another
 * head or table are another model to an index. */
static void test_fingerprints(void **s)
{
    (void)s;
    char a[256], b[256];
    if (!copy_model("cache/rand-docv2-idf", "fp1", "true", a, sizeof a) ||
        !copy_model("cache/rand-docv2-idf", "fp2", "rm idf.json", b, sizeof b))
        skip();
    splade_model *x, *y;
    assert_int_equal(splade_model_load(a, &x), SPLADE_OK);
    assert_int_equal(splade_model_load(b, &y), SPLADE_OK);
    assert_true(splade_model_fingerprint(x) != splade_model_fingerprint(y));
    assert_false(splade_model_has_query_table(y));
    assert_int_equal(splade_model_query_table_fingerprint(y), 0);
    splade_model_free(x), splade_model_free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distilbert),
        cmocka_unit_test(test_sum_pooling),
        cmocka_unit_test(test_router_document),
        cmocka_unit_test(test_plain_idf_document),
        cmocka_unit_test(test_query_table_static),
        cmocka_unit_test(test_query_table_idf),
        cmocka_unit_test(test_multilingual),
        cmocka_unit_test(test_gpu_models),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_distilbert_missing_tensor),
        cmocka_unit_test(test_layout_errors),
        cmocka_unit_test(test_fingerprints),
        cmocka_unit_test(test_tokenizer_json),
    };
    return td_run_group(tests);
}
