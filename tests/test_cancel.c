/* Cancellation (issue 10): the caller's flag in splade_encoder_opts, splade_ingest_opts and
 * splade_builder_set_cancel stops a call with SPLADE_ERR_CANCELLED, leaves nothing allocated in the
 * outputs, keeps the encoder usable and the previous index untouched; and
 * splade_encoder_encode_chunked, the one call that reproduces the CLI's chunks. Runs on the fixture
 * model of model_fixture.h (no download needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "encoder/encoder_tokenize.h"
#include "model_fixture.h"
#include "splade.h"
#include "splade/build.h"
#include "splade/encoder.h"
#include "splade/index.h"
#include "splade/model.h"
#include "splade/pipeline.h"

enum { N_TEXTS = 40 };

typedef struct {
    char *model_dir;
    splade_model *m;
    char *texts[N_TEXTS];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    fx_opts o = {.lowercase = 1};
    f->model_dir = fx_make(&o);
    if (!f->model_dir || splade_model_load(f->model_dir, &f->m) != SPLADE_OK)
        return -1;
    for (int i = 0; i < N_TEXTS; i++) { /* lengths 1..8 words: several batches, sorted by length */
        char buf[64] = "";
        for (int w = 0; w <= i % 8; w++)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%c%c", w ? " " : "", 'a' + (i + w) % 26,
                     'a' + (3 * i + w) % 26);
        f->texts[i] = strdup(buf);
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < N_TEXTS; i++)
        free(f->texts[i]);
    splade_model_free(f->m);
    fx_remove(f->model_dir);
    free(f);
    return 0;
}

static splade_encoder *make_encoder_capped(const fixture *f, const volatile int *cancel, int batch, int32_t cap)
{
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CPU;
    o.threads = 1;
    o.quiet = 1;
    o.batch_size = batch;
    o.cancel = cancel;
    o.max_batch_tokens = cap;
    splade_encoder *e;
    assert_int_equal(splade_encoder_create(f->m, &o, &e), SPLADE_OK);
    return e;
}

static splade_encoder *make_encoder(const fixture *f, const volatile int *cancel, int batch)
{
    return make_encoder_capped(f, cancel, batch, 0);
}

static int same_vectors(const splade_sparse *a, const splade_sparse *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].n != b[i].n || memcmp(a[i].terms, b[i].terms, (size_t)a[i].n * 4) ||
            memcmp(a[i].weights, b[i].weights, (size_t)a[i].n * 4))
            return 0;
    return 1;
}

static void free_vectors(splade_sparse *v, int n)
{
    for (int i = 0; i < n; i++)
        splade_sparse_free(&v[i]);
}

static int all_empty(const splade_sparse *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i].n || v[i].terms || v[i].weights)
            return 0;
    return 1;
}

static void test_opts_init_clears_cancel(void **state)
{
    (void)state;
    splade_encoder_opts eo;
    memset(&eo, 0xff, sizeof eo);
    splade_encoder_opts_init(&eo);
    assert_null(eo.cancel);
    splade_ingest_opts io;
    memset(&io, 0xff, sizeof io);
    splade_ingest_opts_init(&io);
    assert_null(io.cancel);
    assert_string_equal(splade_strerror(SPLADE_ERR_CANCELLED), "cancelled");
}

/* A set flag stops the call, frees what it made; cleared, the same encoder gives the vectors of an
 * encoder that never had a flag. */
static void test_encoder_cancel_then_usable(void **state)
{
    fixture *f = *state;
    volatile int flag = 1;
    splade_encoder *plain = make_encoder(f, NULL, 4), *e = make_encoder(f, &flag, 4);
    splade_sparse want[N_TEXTS], got[N_TEXTS];
    const char *const *t = (const char *const *)f->texts;
    assert_int_equal(splade_encoder_encode(plain, t, NULL, N_TEXTS, want, NULL), SPLADE_OK);
    memset(got, 0x5a, sizeof got);
    int cut = 7;
    splade_clear_error();
    assert_int_equal(splade_encoder_encode(e, t, NULL, N_TEXTS, got, &cut), SPLADE_ERR_CANCELLED);
    assert_non_null(strstr(splade_error_detail(), "cancelled"));
    assert_true(all_empty(got, N_TEXTS));
    assert_int_equal(cut, 0);
    /* encode_ids reads the flag too (it is the forward loop that does) */
    int32_t ids[3] = {2, 10, 3}, offs[2] = {0, 3};
    assert_int_equal(splade_encoder_encode_ids(e, ids, offs, 1, got), SPLADE_ERR_CANCELLED);
    assert_true(all_empty(got, 1));
    flag = 0;
    assert_int_equal(splade_encoder_encode(e, t, NULL, N_TEXTS, got, &cut), SPLADE_OK);
    assert_true(same_vectors(want, got, N_TEXTS));
    free_vectors(got, N_TEXTS);
    free_vectors(want, N_TEXTS);
    splade_encoder_free(e);
    splade_encoder_free(plain);
}

/* chunked(k) = one splade_encoder_encode per k texts, bit for bit; chunk <= 0 (or >= n) = one call. */
static void test_encode_chunked(void **state)
{
    fixture *f = *state;
    splade_encoder *e = make_encoder(f, NULL, 4);
    const char *const *t = (const char *const *)f->texts;
    splade_sparse one[N_TEXTS], parts[N_TEXTS], got[N_TEXTS];
    assert_int_equal(splade_encoder_encode(e, t, NULL, N_TEXTS, one, NULL), SPLADE_OK);
    for (int s = 0; s < N_TEXTS; s += 16)
        assert_int_equal(splade_encoder_encode(e, t + s, NULL, N_TEXTS - s < 16 ? N_TEXTS - s : 16, parts + s, NULL),
                         SPLADE_OK);
    int cut = -1;
    assert_int_equal(splade_encoder_encode_chunked(e, t, NULL, N_TEXTS, 16, got, &cut), SPLADE_OK);
    assert_int_equal(cut, 0);
    assert_true(same_vectors(parts, got, N_TEXTS));
    free_vectors(got, N_TEXTS);
    for (int chunk = -1; chunk <= N_TEXTS; chunk += N_TEXTS + 1) { /* -1 and N_TEXTS */
        assert_int_equal(splade_encoder_encode_chunked(e, t, NULL, N_TEXTS, chunk, got, NULL), SPLADE_OK);
        assert_true(same_vectors(one, got, N_TEXTS));
        free_vectors(got, N_TEXTS);
    }
    /* lens are honoured per chunk (an offset into the array, not its start) */
    size_t lens[N_TEXTS];
    for (int i = 0; i < N_TEXTS; i++)
        lens[i] = strlen(t[i]);
    assert_int_equal(splade_encoder_encode_chunked(e, t, lens, N_TEXTS, 16, got, NULL), SPLADE_OK);
    assert_true(same_vectors(parts, got, N_TEXTS));
    free_vectors(got, N_TEXTS);
    /* groups of 1 and 3: 16 groups go per encoder call, so 40 texts take 3 (resp. 1) calls; each group
     * still forms its own batches (counted: a batch across two groups would change the count) */
    for (int g = 1; g <= 3; g += 2) {
        splade_sparse each[N_TEXTS];
        int expect = 0;
        for (int s = 0; s < N_TEXTS; s += g) {
            const int k = N_TEXTS - s < g ? N_TEXTS - s : g;
            assert_int_equal(splade_encoder_encode(e, t + s, NULL, k, each + s, NULL), SPLADE_OK);
            expect += (k + 3) / 4;
        }
        const int before = splade_encoder_batches_run(e);
        assert_int_equal(splade_encoder_encode_chunked(e, t, NULL, N_TEXTS, g, got, NULL), SPLADE_OK);
        assert_int_equal(splade_encoder_batches_run(e) - before, expect);
        assert_true(same_vectors(each, got, N_TEXTS));
        free_vectors(got, N_TEXTS);
        free_vectors(each, N_TEXTS);
    }
    assert_int_equal(splade_encoder_encode_chunked(e, t, NULL, 0, 16, got, &cut), SPLADE_OK);
    assert_int_equal(cut, 0);
    assert_int_equal(splade_encoder_encode_chunked(NULL, t, NULL, 1, 16, got, NULL), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_encoder_encode_chunked(e, NULL, NULL, 1, 16, got, NULL), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_encoder_encode_chunked(e, t, NULL, -1, 16, got, NULL), SPLADE_ERR_INVALID_ARG);
    free_vectors(one, N_TEXTS);
    free_vectors(parts, N_TEXTS);
    splade_encoder_free(e);
}

/* The same with splade-tiny (cache/, `make models`) on the first 96 texts of its goldens: a real model's
 * weights depend in the last bit on the batch a text lands in (the GEMM's shape picks its kernel), so
 * here the grouping shows: chunked(32) is the three calls of 32, not the one call of 96. */
static void test_encode_chunked_tiny(void **state)
{
    (void)state;
    splade_model *m;
    if (access("cache/splade-tiny/model.safetensors", R_OK) != 0 ||
        splade_model_load("cache/splade-tiny", &m) != SPLADE_OK) {
        printf("SKIP: cache/splade-tiny absent (make models)\n");
        skip();
    }
    enum { N = 96, G = 32 };
    static char *texts[N];
    FILE *g = fopen("tests/data/encoder/golden_splade_tiny.jsonl", "r");
    assert_non_null(g);
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (n < N && getline(&line, &cap, g) > 0) {
        json_t *r = json_loads(line, 0, NULL);
        const char *t = json_string_value(json_object_get(r, "text"));
        if (t)
            texts[n++] = strdup(t);
        json_decref(r);
    }
    free(line);
    fclose(g);
    assert_int_equal(n, N);
    fixture tiny = {.m = m};
    splade_encoder *e = make_encoder(&tiny, NULL, 0);
    static splade_sparse one[N], parts[N], got[N];
    const char *const *t = (const char *const *)texts;
    assert_int_equal(splade_encoder_encode(e, t, NULL, N, one, NULL), SPLADE_OK);
    for (int s = 0; s < N; s += G)
        assert_int_equal(splade_encoder_encode(e, t + s, NULL, G, parts + s, NULL), SPLADE_OK);
    assert_false(same_vectors(one, parts, N)); /* else this test could not tell the groupings apart */
    assert_int_equal(splade_encoder_encode_chunked(e, t, NULL, N, G, got, NULL), SPLADE_OK);
    assert_true(same_vectors(parts, got, N));
    free_vectors(got, N);
    assert_int_equal(splade_encoder_encode_chunked(e, t, NULL, N, 0, got, NULL), SPLADE_OK);
    assert_true(same_vectors(one, got, N));
    free_vectors(got, N);
    free_vectors(one, N);
    free_vectors(parts, N);
    for (int i = 0; i < N; i++)
        free(texts[i]);
    splade_encoder_free(e);
    splade_model_free(m);
}

/* A group after the first fails (here: a text over the token cap, which fails like a GPU out of memory
 * even alone): the groups already encoded are freed too, nothing is left in out; a set flag stops the
 * first group. */
static void test_encode_chunked_failure_frees_earlier_groups(void **state)
{
    fixture *f = *state;
    const char *t[24];
    for (int i = 0; i < 24; i++)
        t[i] = i == 20 ? "ab cd ef gh ij kl mn" : "ab cd";
    splade_encoder *e = make_encoder_capped(f, NULL, 4, 10);
    splade_sparse got[N_TEXTS]; /* the cancelled call below takes N_TEXTS */
    memset(got, 0, sizeof got);
    assert_int_equal(splade_encoder_encode_chunked(e, t, NULL, 24, 8, got, NULL), SPLADE_ERR_GPU_OOM);
    assert_true(all_empty(got, 24));
    assert_int_equal(splade_encoder_encode_chunked(e, t, NULL, 16, 8, got, NULL), SPLADE_OK);
    assert_true(got[15].n > 0);
    free_vectors(got, 16);
    splade_encoder_free(e);

    volatile int flag = 1;
    e = make_encoder(f, &flag, 4);
    assert_int_equal(splade_encoder_encode_chunked(e, (const char *const *)f->texts, NULL, N_TEXTS, 16, got, NULL),
                     SPLADE_ERR_CANCELLED);
    assert_true(all_empty(got, N_TEXTS));
    splade_encoder_free(e);
}

static void write_corpus(const fixture *f, const char *path, int n)
{
    FILE *c = fopen(path, "w");
    assert_non_null(c);
    for (int i = 0; i < n; i++)
        fprintf(c, "{\"_id\": \"d%d\", \"title\": \"\", \"text\": \"%s\"}\n", i, f->texts[i % N_TEXTS]);
    fclose(c);
}

typedef struct {
    volatile int *flag;
    uint64_t stop_at, last_done, last_total;
    int calls;
} progress_log;

/* Sets the flag once `stop_at` documents are reported: a cancel arriving between two chunks. */
static void progress(void *user, const char *stage, uint64_t done, uint64_t total)
{
    progress_log *p = user;
    assert_string_equal(stage, "documents");
    p->calls++;
    p->last_done = done;
    p->last_total = total;
    if (p->stop_at && done >= p->stop_at)
        *p->flag = 1;
}

static splade_index_builder *model_builder(const fixture *f)
{
    splade_index_builder *b;
    assert_int_equal(splade_builder_create_for_model(f->m, "fx", 16, &b), SPLADE_OK);
    return b;
}

/* The ingest reads its flag between chunks: set before, nothing is encoded; set by the progress
 * callback after the second chunk, the third is never encoded and no final report claims completion. */
static void test_ingest_cancel_between_chunks(void **state)
{
    fixture *f = *state;
    char dir[] = "/tmp/splade_cancel_XXXXXX", corpus[64];
    assert_non_null(mkdtemp(dir));
    snprintf(corpus, sizeof corpus, "%s/c.jsonl", dir);
    write_corpus(f, corpus, 20);
    volatile int flag = 1;
    splade_encoder *e = make_encoder(f, NULL, 2);
    splade_index_builder *b = model_builder(f);
    splade_ingest_opts io;
    splade_ingest_opts_init(&io);
    io.cancel = &flag;
    assert_int_equal(splade_ingest_corpus(b, corpus, e, 4, &io), SPLADE_ERR_CANCELLED);
    assert_non_null(strstr(splade_error_detail(), "after 0 documents"));
    splade_builder_free(b);

    flag = 0;
    progress_log p = {.flag = &flag, .stop_at = 8};
    io.progress = progress;
    io.progress_user = &p;
    b = model_builder(f);
    assert_int_equal(splade_ingest_corpus(b, corpus, e, 4, &io), SPLADE_ERR_CANCELLED);
    assert_non_null(strstr(splade_error_detail(), "after 8 documents"));
    assert_int_equal(p.calls, 2);
    assert_int_equal(p.last_done, 8);
    assert_true(p.last_total > p.last_done);
    splade_builder_free(b);

    flag = 0;
    p = (progress_log){.flag = &flag};
    b = model_builder(f);
    assert_int_equal(splade_ingest_corpus(b, corpus, e, 4, &io), SPLADE_OK);
    assert_int_equal(splade_builder_n_docs(b), 20);
    assert_int_equal(p.last_done, 20);
    assert_int_equal(p.last_total, 20);
    splade_builder_free(b);
    splade_encoder_free(e);
    unlink(corpus);
    rmdir(dir);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

static int build_docs(const fixture *f, const char *dir, int n, const volatile int *cancel, int lock)
{
    char corpus[600];
    snprintf(corpus, sizeof corpus, "%s.jsonl", dir);
    write_corpus(f, corpus, n);
    splade_encoder *e = make_encoder(f, NULL, 4);
    splade_index_builder *b = model_builder(f);
    splade_ingest_opts io;
    splade_ingest_opts_init(&io);
    int rc = lock ? splade_builder_lock(b, dir) : SPLADE_OK;
    if (rc == 0)
        rc = splade_ingest_corpus(b, corpus, e, 8, &io);
    splade_builder_set_cancel(b, cancel);
    if (rc == 0)
        rc = splade_builder_write(b, dir, NULL);
    splade_builder_free(b);
    splade_encoder_free(e);
    unlink(corpus);
    return rc;
}

/* A cancelled write leaves the previous index as it was and no temporary or lock file; into a new
 * folder (locked by the builder) it leaves no folder. Cleared, the same flag lets a build through. */
static void test_builder_write_cancel_keeps_previous_index(void **state)
{
    fixture *f = *state;
    char root[] = "/tmp/splade_cancel_XXXXXX", dir[128], fresh[128], spx[160];
    assert_non_null(mkdtemp(root));
    snprintf(dir, sizeof dir, "%s/idx", root);
    snprintf(fresh, sizeof fresh, "%s/new", root);
    snprintf(spx, sizeof spx, "%s/%s", dir, SPLADE_INDEX_FILE);
    volatile int flag = 0;
    assert_int_equal(build_docs(f, dir, 12, &flag, 0), SPLADE_OK);
    struct stat before, after;
    assert_int_equal(stat(spx, &before), 0);
    flag = 1;
    assert_int_equal(build_docs(f, dir, 30, &flag, 1), SPLADE_ERR_CANCELLED);
    assert_non_null(strstr(splade_error_detail(), "previous index is untouched"));
    assert_int_equal(stat(spx, &after), 0);
    assert_true(before.st_ino == after.st_ino && before.st_size == after.st_size &&
                before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
    assert_int_equal(count_entries(dir), 1); /* index.spx alone: no .index.spx.tmp-*, no .lock */
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), SPLADE_OK);
    assert_int_equal(splade_index_get_info(ix)->n_docs, 12);
    splade_index_close(ix);

    assert_int_equal(build_docs(f, fresh, 5, &flag, 1), SPLADE_ERR_CANCELLED);
    struct stat st;
    assert_int_not_equal(stat(fresh, &st), 0); /* the folder the cancelled build made is gone */

    flag = 0;
    assert_int_equal(build_docs(f, dir, 30, &flag, 1), SPLADE_OK);
    assert_int_equal(splade_index_open(dir, &ix), SPLADE_OK);
    assert_int_equal(splade_index_get_info(ix)->n_docs, 30);
    splade_index_close(ix);
    unlink(spx);
    rmdir(dir);
    rmdir(root);
}

int main(void)
{
    /* The chunked tests tell groupings apart by the vectors' last bits, which depend on the batch only
     * where the CPU GEMM's do: OpenBLAS's row blocking. oneDNN's fp32 path (many rows) gives a row the
     * same bits in any batch, so these tests ask for OpenBLAS (settings are read on first use). */
    setenv("SPLADE_GEMM_CPU", "blas", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opts_init_clears_cancel),
        cmocka_unit_test(test_encoder_cancel_then_usable),
        cmocka_unit_test(test_encode_chunked),
        cmocka_unit_test(test_encode_chunked_tiny),
        cmocka_unit_test(test_encode_chunked_failure_frees_earlier_groups),
        cmocka_unit_test(test_ingest_cancel_between_chunks),
        cmocka_unit_test(test_builder_write_cancel_keeps_previous_index),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
