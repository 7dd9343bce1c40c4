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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "splade.h"
#include "splade/encoder.h"
#include "splade/model.h"
#include "splade/tokenizer.h"
#include "golden_vectors.h"

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
    char st[512];
    snprintf(st, sizeof st, "%s/document_0_MLMTransformer", c->model_dir);
    if (gv_sha_matches(access(st, R_OK) == 0 ? st : c->model_dir, gf->sha) == 0)
        fail_msg("%s differs from the model the goldens were made with (sha256 %s): rerun make models",
                 c->model_dir, gf->sha);
    splade_model *m;
    if (splade_model_load(c->model_dir, &m))
        fail_msg("load %s: %s", c->model_dir, splade_error_detail());
    return m;
}

static splade_encoder *cpu_encoder(const splade_model *m, int max_length)
{
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CPU, o.threads = 2, o.quiet = 1, o.max_length = max_length;
    splade_encoder *e;
    if (splade_encoder_create(m, &o, &e))
        fail_msg("encoder: %s", splade_error_detail());
    return e;
}

static double check_rows(const gv_file *gf, splade_sparse *v)
{
    double worst = 0.0;
    for (int i = 0; i < gf->n; i++) {
        int32_t only;
        double d = gv_compare(&gf->g[i], &v[i], TOL, &only);
        if (only >= 0)
            fail_msg("%s: term %d present on one side only", gf->g[i].id, only);
        worst = d > worst ? d : worst;
        splade_sparse_free(&v[i]);
    }
    return worst;
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
    splade_encoder *e = cpu_encoder(m, gf.max_length);
    assert_int_equal(splade_encoder_encode_ids(e, ids, off, gf.n, v), SPLADE_OK);
    double w_ids = check_rows(&gf, v);
    /* tokens: the model's tokenizer must give HF's ids for every text */
    for (int i = 0; i < gf.n; i++) {
        int32_t got[1024], n = 0;
        assert_int_equal(splade_tokenize(splade_model_tokenizer(m), texts[i], strlen(texts[i]), gf.max_length, got,
                                         &n), SPLADE_OK);
        if (n != gf.g[i].n_ids || memcmp(got, gf.g[i].ids, (size_t)n * sizeof *got))
            fail_msg("%s: %d tokens here, %d in HF's tokenizer (or different ids)", gf.g[i].id, n, gf.g[i].n_ids);
    }
    int cut = -1;
    assert_int_equal(splade_encoder_encode(e, texts, NULL, gf.n, v, &cut), SPLADE_OK);
    double w_text = check_rows(&gf, v);
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

/* --- bad input ------------------------------------------------------------------------ */

static char tmpdir[64];

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
    snprintf(p, sizeof p, "%s/config.json", tmpdir);
    write_file(tmpdir, "config.json", json);
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
    snprintf(tmpdir, sizeof tmpdir, "/tmp/splade-models-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
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
    snprintf(dir, sizeof dir, "%s/distil", tmpdir);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distilbert),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_distilbert_missing_tensor),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (tmpdir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd)) {}
    }
    return rc;
}
