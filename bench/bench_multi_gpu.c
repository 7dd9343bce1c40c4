/* Scaling of the encoder over several GPUs (issue #17): SciFact documents, tokenized once with
 * splade-tiny's tokenizer (bert-base-uncased's vocabulary, 256 tokens at most) and replicated R times,
 * encoded by a random-weight model of bert-base's shape (in memory: no model folder needed) through
 * the public encoder API, once per --device spec. Per spec: docs/s, the speed-up over the first spec,
 * and whether every vector is bit for bit the first spec's (a 64-bit hash per document). Also the
 * tokenizer's rate on one core, for the CPU side of a build (cores per GPU).
 *
 *   bench_multi_gpu [CORPUS.jsonl] [R] [CHUNK] [SPEC...]
 *   defaults: .gpu/scifact/corpus.jsonl 8 2048 cuda:0 cuda:all; $SPLADE_TINY_DIR or cache/splade-tiny;
 *   BENCH_SHAPE=tiny: splade-tiny's own weights instead of random bert-base ones.
 *   BENCH_TERMS (default 200; 0 = off): the random model's decoder bias is shifted so that a document
 *   keeps about that many terms, as a trained model does (tests/gpu_random_model.h), measured on the
 *   first 64 documents through cuda:0 before any timing; a dense random output would make the host's
 *   sparsification, not the GPUs, the measured limit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "encoder/model_internal.h"
#include "splade.h"
#include "splade/corpus.h"
#include "splade/encoder.h"
#include "splade/model.h"
#include "splade/tokenizer.h"

#include "../tests/gpu_random_model.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(int rc, const char *what)
{
    fprintf(stderr, "bench_multi_gpu: %s: %d %s\n", what, rc, splade_error_detail());
    exit(1);
}

typedef struct {
    int32_t *ids, *off;
    int n;
} docs;

/* The corpus tokenized (max 256 tokens, cut as the encoder cuts), replicated r times. */
static docs tokenize_corpus(const char *path, const splade_tokenizer *tok, int r, double *tok_s)
{
    splade_corpus_reader *cr;
    int rc = splade_corpus_open(path, &cr);
    if (rc)
        die(rc, path);
    size_t cap = 1 << 20, used = 0;
    int ncap = 8192, n = 0;
    docs d = {malloc(cap * sizeof(int32_t)), malloc((size_t)(ncap + 1) * sizeof(int32_t)), 0};
    d.off[0] = 0;
    splade_doc doc;
    double t0 = now();
    while ((rc = splade_corpus_next(cr, &doc)) == 1) {
        if (used + 258 > cap)
            d.ids = realloc(d.ids, (cap *= 2) * sizeof(int32_t));
        if (n + 1 >= ncap)
            d.off = realloc(d.off, (size_t)((ncap *= 2) + 1) * sizeof(int32_t));
        int32_t k = 0;
        if ((rc = splade_tokenize(tok, doc.text, doc.text_len, 257, d.ids + used, &k)))
            die(rc, "tokenize");
        if (k > 256) {
            d.ids[used + 255] = d.ids[used + k - 1];
            k = 256;
        }
        used += (size_t)k;
        d.off[++n] = (int32_t)used;
    }
    *tok_s = now() - t0;
    splade_corpus_close(cr);
    if (rc < 0)
        die(rc, path);
    d.ids = realloc(d.ids, used * (size_t)r * sizeof(int32_t));
    d.off = realloc(d.off, ((size_t)n * r + 1) * sizeof(int32_t));
    for (int k = 1; k < r; k++) {
        memcpy(d.ids + used * k, d.ids, used * sizeof(int32_t));
        for (int i = 1; i <= n; i++)
            d.off[n * k + i] = d.off[i] + (int32_t)(used * k);
    }
    d.n = n * r;
    return d;
}

static double g_terms; /* mean terms per document of the last run_spec */

static uint64_t hash_vec(const splade_sparse *v)
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p[2] = {(const unsigned char *)v->terms, (const unsigned char *)v->weights};
    for (int a = 0; a < 2; a++)
        for (size_t i = 0; i < (size_t)v->n * 4; i++)
            h = (h ^ p[a][i]) * 1099511628211ull;
    return h ^ (uint64_t)v->n;
}

/* Encodes every document in chunks of `chunk` under `spec`: docs/s; hashes into h[n]. */
static double run_spec(const splade_model *m, const char *spec, const docs *d, int chunk, uint64_t *h)
{
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.quiet = 1;
    o.top_k = 256;
    int rc = splade_parse_devices(spec, &o);
    splade_encoder *e = NULL;
    if (rc || (rc = splade_encoder_create(m, &o, &e)))
        die(rc, spec);
    splade_sparse *v = calloc((size_t)chunk, sizeof *v);
    const int warm = d->n < chunk ? d->n : chunk; /* cuBLASLt plans, workspaces */
    if ((rc = splade_encoder_encode_ids(e, d->ids, d->off, warm, v)))
        die(rc, "warm-up");
    for (int i = 0; i < warm; i++)
        splade_sparse_free(&v[i]);
    double t0 = now();
    long long terms = 0;
    for (int s = 0; s < d->n; s += chunk) {
        const int k = d->n - s < chunk ? d->n - s : chunk;
        int32_t *off = malloc((size_t)(k + 1) * sizeof *off);
        for (int i = 0; i <= k; i++)
            off[i] = d->off[s + i] - d->off[s];
        if ((rc = splade_encoder_encode_ids(e, d->ids + d->off[s], off, k, v)))
            die(rc, spec);
        for (int i = 0; i < k; i++) {
            h[s + i] = hash_vec(&v[i]);
            terms += v[i].n;
            splade_sparse_free(&v[i]);
        }
        free(off);
    }
    double dt = now() - t0;
    g_terms = (double)terms / d->n;
    free(v);
    splade_encoder_free(e);
    return d->n / dt;
}

/* Shifts the random model's decoder bias to about `target` terms per document (see the header). */
static void calibrate(splade_model *m, const docs *d, int target)
{
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.quiet = 1;
    o.top_k = target + 56;
    splade_encoder *e = NULL;
    int rc = splade_parse_devices("cuda:0", &o);
    if (rc || (rc = splade_encoder_create(m, &o, &e)))
        die(rc, "calibration encoder");
    enum { SAMPLE = 64 };
    const int n = d->n < SAMPLE ? d->n : SAMPLE;
    splade_sparse v[SAMPLE];
    memset(v, 0, sizeof v);
    if ((rc = splade_encoder_encode_ids(e, d->ids, d->off, n, v)))
        die(rc, "calibration");
    const float c = rm_shift_to_sparsity(m, v, n, target);
    for (int i = 0; i < n; i++)
        splade_sparse_free(&v[i]);
    splade_encoder_free(e);
    printf("decoder bias shifted by %.3f for ~%d terms per document\n", c, target);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : ".gpu/scifact/corpus.jsonl";
    const int r = argc > 2 ? atoi(argv[2]) : 8, chunk = argc > 3 ? atoi(argv[3]) : 2048;
    const char *dflt[] = {"cuda:0", "cuda:all"};
    const char *const *specs = argc > 4 ? (const char *const *)argv + 4 : dflt;
    const int nspec = argc > 4 ? argc - 4 : 2;
    const char *tiny_dir = getenv("SPLADE_TINY_DIR") ? getenv("SPLADE_TINY_DIR") : "cache/splade-tiny";
    splade_model *tiny = NULL;
    int rc = splade_model_load(tiny_dir, &tiny);
    if (rc)
        die(rc, tiny_dir);
    double tok_s;
    docs d = tokenize_corpus(path, splade_model_tokenizer(tiny), r, &tok_s);
    const int n1 = d.n / r;
    const char *shape = getenv("BENCH_SHAPE") ? getenv("BENCH_SHAPE") : "base";
    splade_model rm;
    const splade_model *m = tiny;
    if (strcmp(shape, "tiny")) {
        memset(&rm, 0, sizeof rm);
        rm.cfg = rm_config(tiny->cfg.vocab_size, 768, 12, 12, 3072, 512, 1);
        if (rm_build(&rm, 42))
            die(SPLADE_ERR_NOMEM, "random bert-base");
        m = &rm;
        const int target = getenv("BENCH_TERMS") ? atoi(getenv("BENCH_TERMS")) : 200;
        if (target > 0)
            calibrate(&rm, &d, target);
    }
    printf("corpus %s: %d docs x %d = %d, %.1f tokens/doc; tokenizer on one core: %.0f docs/s\n", path, n1, r, d.n,
           (double)d.off[d.n] / d.n, n1 / tok_s);
    printf("model: %s (H=%d, L=%d, V=%d), bf16, batch 64, top_k 256, %d docs per encode call, SPLADE_GPU_GEMM_TUNE=%s\n\n",
           strcmp(shape, "tiny") ? "random bert-base shape" : "splade-tiny", m->cfg.hidden_size, m->cfg.num_layers,
           m->cfg.vocab_size, chunk, getenv("SPLADE_GPU_GEMM_TUNE") ? getenv("SPLADE_GPU_GEMM_TUNE") : "(default)");
    printf("| --device | docs/s | speed-up | terms/doc | vectors identical to %s |\n|---|---:|---:|---:|---|\n", specs[0]);
    uint64_t *h0 = malloc((size_t)d.n * sizeof *h0), *h = malloc((size_t)d.n * sizeof *h);
    double base = 0;
    for (int k = 0; k < nspec; k++) {
        double dps = run_spec(m, specs[k], &d, chunk, k ? h : h0);
        if (!k)
            base = dps;
        printf("| %s | %.0f | %.2fx | %.0f | %s |\n", specs[k], dps, dps / base, g_terms,
               k ? (memcmp(h0, h, (size_t)d.n * sizeof *h) ? "NO" : "yes") : "-");
        fflush(stdout);
    }
    if (m != tiny)
        rm_free(&rm);
    splade_model_free(tiny);
    free(h0), free(h), free(d.ids), free(d.off);
    return 0;
}
