/* The CPU's reduced-precision forwards (bf16, int8) against its fp32 one, for
 * tests/test_encoder_cpu_bf16.c and tests/test_encoder_cpu_int8.c: dense vectors of one encoder run,
 * and the comparison both tests assert (relative L2 distance of all vectors together, the share of
 * each fp32 top-10 term kept in the other's top 20, and that the other format did run). Header-only;
 * also the two checks run in both formats (threads bit for bit, splade-tiny). The including test defines
 * REL_L2_TOL, TOP10_MIN and PRECISION_NAME ("bf16", "int8") first and includes the random-model helpers. */
#ifndef SPLADE_TEST_CPU_PRECISION_CHECK_H
#define SPLADE_TEST_CPU_PRECISION_CHECK_H

static void encode_dense(const splade_model *m, splade_cpu_precision p, int threads, int batch, const int32_t *ids,
                   const int32_t *off, int n, float *dense)
{
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CPU, o.threads = threads, o.batch_size = batch, o.quiet = 1, o.cpu_precision = p;
    o.max_length = 512;
    splade_encoder *e;
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    splade_sparse *v = calloc((size_t)n, sizeof *v);
    assert_int_equal(splade_encoder_encode_ids(e, ids, off, n, v), SPLADE_OK);
    const int32_t V = m->cfg.vocab_size;
    memset(dense, 0, (size_t)n * V * sizeof *dense);
    for (int i = 0; i < n; i++) {
        for (int32_t j = 0; j < v[i].n; j++)
            dense[(size_t)i * V + v[i].terms[j]] = v[i].weights[j];
        splade_sparse_free(&v[i]);
    }
    free(v);
    splade_encoder_free(e);
}

/* 1 when term t is among the k largest of row r. */
static int in_top(const float *r, int32_t V, int32_t t, int k)
{
    int above = 0;
    for (int32_t j = 0; j < V; j++)
        above += r[j] > r[t] || (r[j] == r[t] && j < t);
    return above < k;
}

static void compare_precision(const char *what, const float *a, const float *b, int n, int32_t V)
{
    double num = 0.0, den = 0.0, worst = 0.0, agree = 0.0;
    for (size_t i = 0; i < (size_t)n * V; i++) {
        double d = fabs((double)a[i] - b[i]);
        num += d * d, den += (double)a[i] * a[i];
        worst = d > worst ? d : worst;
    }
    for (int i = 0; i < n; i++) {
        const float *ra = a + (size_t)i * V, *rb = b + (size_t)i * V;
        int hit = 0, tops = 0;
        for (int32_t t = 0; t < V && tops < 10; t++)
            if (ra[t] > 0.0f && in_top(ra, V, t, 10)) {
                tops++;
                hit += in_top(rb, V, t, 20);
            }
        agree += tops ? (double)hit / tops : 1.0;
    }
    const double rel = den > 0 ? sqrt(num / den) : 0.0;
    printf("  %s: %d vectors, max |%s - fp32| %.4f, rel. L2 %.4f, top-10 kept %.3f\n", what, n, PRECISION_NAME, worst, rel,
           agree / n);
    assert_true(den > 0.0);
    assert_true(worst > 0.0); /* the other format did run: fp32 twice would agree bit for bit */
    assert_true(rel <= REL_L2_TOL);
    assert_true(agree / n >= TOP10_MIN);
}

/* 1, 2 and 3 threads give the same vectors in format p, bit for bit (fixed units of work). */
static void check_threads_identical(splade_cpu_precision p)
{
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(3001, 192, 2, 3, 704, 512, 0);
    assert_int_equal(rm_build(&m, 8), 0);
    static const int lens[] = {260, 40, 7};
    enum { N = sizeof lens / sizeof *lens };
    int32_t *ids, *off;
    rm_make_batch(lens, N, m.cfg.vocab_size, 3, &ids, &off);
    const size_t n = (size_t)N * m.cfg.vocab_size;
    float *one = malloc(n * sizeof *one), *more = malloc(n * sizeof *more);
    encode_dense(&m, p, 1, N, ids, off, N, one);
    for (int t = 2; t <= 3; t++) {
        encode_dense(&m, p, t, N, ids, off, N, more);
        assert_memory_equal(one, more, n * sizeof *one);
    }
    free(one), free(more), free(ids), free(off);
    rm_free(&m);
}

/* splade-tiny (trained weights) on query and document lengths, format p against fp32; 0 when
 * cache/splade-tiny is absent (the caller skips). */
static int check_splade_tiny(splade_cpu_precision p)
{
    if (access("cache/splade-tiny/model.safetensors", R_OK) != 0) {
        printf("SKIP: cache/splade-tiny absent (make models)\n");
        return 0;
    }
    splade_model *m;
    assert_int_equal(splade_model_load("cache/splade-tiny", &m), SPLADE_OK);
    static const int lens[] = {256, 200, 32, 12};
    enum { N = sizeof lens / sizeof *lens };
    int32_t *ids, *off;
    rm_make_batch(lens, N, m->cfg.vocab_size, 21, &ids, &off);
    const int32_t V = m->cfg.vocab_size;
    float *f = malloc((size_t)N * V * sizeof *f), *q = malloc((size_t)N * V * sizeof *q);
    encode_dense(m, SPLADE_CPU_FP32, 2, N, ids, off, N, f);
    encode_dense(m, p, 2, N, ids, off, N, q);
    compare_precision("splade-tiny", f, q, N, V);
    free(f), free(q), free(ids), free(off);
    splade_model_free(m);
    return 1;
}

#endif
