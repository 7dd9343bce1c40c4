/* The pieces tests/test_models.c and tests/test_models_real.c share to check a model folder against
 * its goldens (tests/golden_vectors.h, written by tools/make_model_goldens.py / make_real_goldens.py):
 * the folder is the one the goldens were made from, a CPU encoder, and the largest difference over all
 * rows (a term on one side only fails), and a tokens golden. Header-only; needs cmocka included first. */
#ifndef SPLADE_TEST_MODEL_GOLDENS_H
#define SPLADE_TEST_MODEL_GOLDENS_H

#include <unistd.h>

#include "golden_vectors.h"
#include "splade.h"
#include "splade/encoder.h"
#include "splade/model.h"
#include "splade/tokenizer.h"

/* Fails unless dir (or its sentence-transformers document module) hashes to the goldens' sha256. */
static void mg_check_sha(const char *dir, const gv_file *gf, const char *golden)
{
    char st[512];
    snprintf(st, sizeof st, "%s/document_0_MLMTransformer", dir);
    if (gv_sha_matches(access(st, R_OK) == 0 ? st : dir, gf->sha) == 0)
        fail_msg("%s differs from the model %s was made with (sha256 %s): rerun make models", dir, golden, gf->sha);
}

static splade_encoder *mg_cpu_encoder(const splade_model *m, int max_length)
{
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CPU, o.threads = 2, o.quiet = 1, o.max_length = max_length;
    splade_encoder *e;
    if (splade_encoder_create(m, &o, &e))
        fail_msg("encoder: %s", splade_error_detail());
    return e;
}

/* The largest |difference| of v[i] against the goldens' rows, each v[i] freed; a term present on
 * one side only fails. */
static double mg_worst(const gv_file *gf, splade_sparse *v, double tol)
{
    double worst = 0.0;
    for (int i = 0; i < gf->n; i++) {
        int32_t only;
        double d = gv_compare(&gf->g[i], &v[i], tol, &only);
        if (only >= 0)
            fail_msg("%s: term %d present on one side only", gf->g[i].id, only);
        worst = d > worst ? d : worst;
        splade_sparse_free(&v[i]);
    }
    return worst;
}

/* The largest difference between golden query row g and m's inference-free query vector of its text
 * (a term on one side only fails). */
static double mg_query_diff(const splade_model *m, const gv_row *g, int max_length, double tol)
{
    splade_sparse v;
    assert_int_equal(splade_model_query_vector(m, g->text, strlen(g->text), max_length, &v), SPLADE_OK);
    int32_t only;
    const double d = gv_compare(g, &v, tol, &only);
    if (only >= 0)
        fail_msg("%s: term %d present on one side only", g->id, only);
    splade_sparse_free(&v);
    return d;
}

/* Each golden text through the model's tokenizer (the goldens' max_length): HF's ids. */
static void mg_check_golden_ids(const splade_model *m, const gv_file *gf)
{
    for (int i = 0; i < gf->n; i++) {
        int32_t got[1024], n = 0;
        const char *t = gf->g[i].text;
        assert_int_equal(splade_tokenize(splade_model_tokenizer(m), t, strlen(t), gf->max_length, got, &n), SPLADE_OK);
        if (n != gf->g[i].n_ids || memcmp(got, gf->g[i].ids, (size_t)n * sizeof *got))
            fail_msg("%s: %d tokens here, %d in HF's tokenizer (or different ids)", gf->g[i].id, n, gf->g[i].n_ids);
    }
}

/* Every text of a tokens golden (a JSONL of {text, ids} after a header line) through the model's
 * tokenizer (512 pieces): HF's ids; counts ids past 16 bits into *high (may be NULL). Returns the texts. */
static int mg_check_tokens(const splade_model *m, const char *golden, int *high)
{
    FILE *f = fopen(golden, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    int32_t ids[512], n, texts = 0;
    for (int first = 1; getline(&line, &cap, f) > 0; first = 0) {
        if (first)
            continue;
        json_t *r = json_loads(line, 0, NULL);
        assert_non_null(r);
        const char *t = json_string_value(json_object_get(r, "text"));
        int32_t nw, *want = gv_ints(json_object_get(r, "ids"), &nw);
        assert_int_equal(splade_tokenize(splade_model_tokenizer(m), t, strlen(t), 512, ids, &n), SPLADE_OK);
        if (n != nw || memcmp(ids, want, (size_t)n * sizeof *ids))
            fail_msg("%s: tokens differ from HF's for \"%.60s\" (%d here, %d there)", golden, t, n, nw);
        for (int32_t i = 0; high && i < n; i++)
            *high += ids[i] > 65535;
        free(want);
        json_decref(r);
        texts++;
    }
    free(line);
    fclose(f);
    printf("  %s: %d texts, ids equal to HF's\n", golden, texts);
    return texts;
}

#endif
