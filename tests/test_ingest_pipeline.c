/* The pipelined corpus ingest (src/pipeline/ingest_corpus.c, issue #13 item 4): reading and
 * tokenizing chunk k+1 on one thread while chunk k encodes on another must give the index a serial run
 * gives. The reference here is that serial run written out with the public API (read a chunk,
 * splade_encoder_encode it, add_doc then set_vector each document), compared byte for byte over the
 * written files, for chunk sizes from 1 to more than the corpus, in one file and in a bounded-memory
 * build that spills segments; plus the errors of a later chunk (duplicate id, malformed line, skipped
 * lines) and the GPU warm-up calls, which must be harmless without a GPU. Random texts of random
 * lengths (fixed seeds, printed) on the fixture model of model_fixture.h. The pipeline parses the
 * corpus lines on 3 threads (SPLADE_PARSE_THREADS, set in main). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model_fixture.h"
#include "splade.h"
#include "tmp_dir.h"
#include "splade/build.h"
#include "splade/corpus.h"
#include "splade/encoder.h"
#include "splade/index.h"
#include "splade/model.h"
#include "splade/pipeline.h"

typedef struct {
    char *model_dir;
    splade_model *m;
    char root[64];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    fx_opts o = {.lowercase = 1};
    f->model_dir = fx_make(&o);
    if (!f->model_dir || splade_model_load(f->model_dir, &f->m) != SPLADE_OK)
        return -1;
    snprintf(f->root, sizeof f->root, "/tmp/splade_ingest_pipe_XXXXXX");
    if (!mkdtemp(f->root))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    splade_model_free(f->m);
    fx_remove(f->model_dir);
    td_remove(f->root);
    free(f);
    return 0;
}

/* n documents of 1..24 two-letter words (some past the encoder's 12-token cap: truncated), titles on
 * every third. bad_line > 0: that line is malformed; dup_line > 0: that line repeats document 0's id. */
static void write_corpus(const char *path, int n, unsigned seed, int bad_line, int dup_line)
{
    FILE *c = fopen(path, "w");
    assert_non_null(c);
    srand(seed);
    for (int i = 0; i < n; i++) {
        if (i + 1 == bad_line) {
            fprintf(c, "{\"_id\": \"broken\n");
            continue;
        }
        char text[256] = "";
        for (int w = 0, words = 1 + rand() % 24; w < words; w++)
            snprintf(text + strlen(text), sizeof text - strlen(text), "%s%c%c", w ? " " : "", 'a' + rand() % 26,
                     'a' + rand() % 26);
        fprintf(c, "{\"_id\": \"d%d\", \"title\": \"%s\", \"text\": \"%s\"}\n", i + 1 == dup_line ? 0 : i,
                i % 3 ? "" : "ab cd", text);
    }
    fclose(c);
}

static splade_encoder *make_encoder(const fixture *f, int batch)
{
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CPU;
    o.threads = 2;
    o.quiet = 1;
    o.batch_size = batch;
    o.max_length = 12;
    splade_encoder *e;
    assert_int_equal(splade_encoder_create(f->m, &o, &e), SPLADE_OK);
    return e;
}

static splade_index_builder *make_builder(const fixture *f, const splade_encoder *e, const char *dir,
                                          uint64_t memory)
{
    splade_index_builder *b;
    assert_int_equal(splade_builder_create_for_model(f->m, "fx", splade_encoder_max_length(e), &b), SPLADE_OK);
    splade_builder_set_build_time(b, 1700000000);
    if (memory)
        assert_int_equal(splade_builder_set_memory(b, dir, memory, 0), SPLADE_OK);
    return b;
}

/* The serial run the pipeline replaces: chunk_docs documents read, encoded together, then added. */
static int serial_ingest(splade_index_builder *b, const char *path, splade_encoder *e, int chunk_docs)
{
    splade_corpus_reader *r;
    int rc = splade_corpus_open(path, &r);
    if (rc)
        return rc;
    char **texts = calloc((size_t)chunk_docs, sizeof *texts);
    uint32_t *docs = calloc((size_t)chunk_docs, sizeof *docs);
    splade_sparse *v = calloc((size_t)chunk_docs, sizeof *v);
    splade_doc d;
    int n = 0, got = 1;
    while (rc == 0 && got == 1) {
        got = splade_corpus_next(r, &d);
        if (got == 1) {
            rc = splade_builder_add_doc(b, path, d.id, d.title, d.body, d.line, &docs[n]);
            texts[n++] = strdup(d.text);
        } else if (got < 0) {
            rc = got;
        }
        if (rc == 0 && n && (n == chunk_docs || got == 0)) {
            int cut = 0;
            rc = splade_encoder_encode(e, (const char *const *)texts, NULL, n, v, &cut);
            for (int i = 0; i < n; i++) {
                if (rc == 0)
                    rc = splade_builder_set_vector(b, docs[i], v[i].terms, v[i].weights, v[i].n);
                splade_sparse_free(&v[i]);
                free(texts[i]);
            }
            splade_builder_add_truncated(b, (uint32_t)cut);
            n = 0;
        }
    }
    for (int i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
    free(docs);
    free(v);
    splade_corpus_close(r);
    return rc;
}

static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    for (int ca = 0, cb = 0; same && ca != EOF; same = ca == cb)
        ca = fgetc(fa), cb = fgetc(fb);
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* Every file of dir a exists in b with the same bytes, and b has no other; the count compared. */
static int same_tree(const char *a, const char *b)
{
    DIR *d = opendir(a);
    int n = 0, same = d != NULL;
    char pa[512], pb[512];
    for (struct dirent *e; same && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(pa, sizeof pa, "%s/%s", a, e->d_name);
        snprintf(pb, sizeof pb, "%s/%s", b, e->d_name);
        same = same_file(pa, pb);
        n++;
    }
    if (d)
        closedir(d);
    DIR *db = opendir(b);
    for (struct dirent *e; db && (e = readdir(db));)
        n -= e->d_name[0] != '.';
    if (db)
        closedir(db);
    return same && n == 0;
}

static void build_both(const fixture *f, const char *corpus, int n_docs, int chunk, uint64_t memory, int k)
{
    char pipe_dir[128], serial_dir[128];
    snprintf(pipe_dir, sizeof pipe_dir, "%s/pipe%d", f->root, k);
    snprintf(serial_dir, sizeof serial_dir, "%s/serial%d", f->root, k);
    splade_encoder *e = make_encoder(f, 3);
    splade_index_builder *b = make_builder(f, e, pipe_dir, memory);
    splade_ingest_opts io;
    splade_ingest_opts_init(&io);
    assert_int_equal(splade_ingest_corpus(b, corpus, e, chunk, &io), SPLADE_OK);
    assert_int_equal(splade_builder_n_docs(b), n_docs);
    assert_int_equal(splade_builder_write(b, pipe_dir, NULL), SPLADE_OK);
    splade_builder_free(b);
    b = make_builder(f, e, serial_dir, memory);
    assert_int_equal(serial_ingest(b, corpus, e, chunk), SPLADE_OK);
    assert_int_equal(splade_builder_write(b, serial_dir, NULL), SPLADE_OK);
    splade_builder_free(b);
    splade_encoder_free(e);
    if (!same_tree(pipe_dir, serial_dir) || !same_tree(serial_dir, pipe_dir))
        fail_msg("chunk %d, memory %llu: the pipelined index differs from the serial one", chunk,
                 (unsigned long long)memory);
}

/* Chunks of 1, 2, 5, 16 (batches of 3 inside), 37 (the corpus) and 64: the same bytes. */
static void test_pipeline_matches_serial(void **state)
{
    fixture *f = *state;
    const unsigned seed = 20261125;
    char corpus[128];
    snprintf(corpus, sizeof corpus, "%s/c.jsonl", f->root);
    write_corpus(corpus, 37, seed, 0, 0);
    print_message("seed %u\n", seed);
    const int chunks[] = {1, 2, 5, 16, 37, 64};
    for (int i = 0; i < 6; i++)
        build_both(f, corpus, 37, chunks[i], 0, i);
}

/* A memory budget small enough to spill several segments: the same segments, the same manifest. */
static void test_pipeline_matches_serial_segments(void **state)
{
    fixture *f = *state;
    const unsigned seed = 7;
    char corpus[128];
    snprintf(corpus, sizeof corpus, "%s/big.jsonl", f->root);
    write_corpus(corpus, 300, seed, 0, 0);
    print_message("seed %u\n", seed);
    build_both(f, corpus, 300, 8, 48 << 10, 10);
    char manifest[160];
    snprintf(manifest, sizeof manifest, "%s/pipe10/MANIFEST", f->root);
    assert_int_equal(access(manifest, F_OK), 0); /* it did spill */
}

static int ingest_rc(const fixture *f, const char *corpus, int chunk, splade_ingest_opts *io, uint32_t *n_docs)
{
    splade_encoder *e = make_encoder(f, 2);
    splade_index_builder *b = make_builder(f, e, NULL, 0);
    int rc = splade_ingest_corpus(b, corpus, e, chunk, io);
    *n_docs = splade_builder_n_docs(b);
    splade_builder_free(b);
    splade_encoder_free(e);
    return rc;
}

/* Errors in a later chunk, while earlier ones are encoding: named as a serial run names them. */
static void test_pipeline_errors(void **state)
{
    fixture *f = *state;
    char corpus[128];
    uint32_t n;
    splade_ingest_opts io;
    snprintf(corpus, sizeof corpus, "%s/dup.jsonl", f->root);
    write_corpus(corpus, 30, 3, 0, 23);
    splade_ingest_opts_init(&io);
    assert_int_equal(ingest_rc(f, corpus, 4, &io, &n), SPLADE_ERR_DUPLICATE);
    assert_non_null(strstr(splade_error_detail(), "dup.jsonl:23: duplicate id \"d0\" (first seen on line 1)"));

    snprintf(corpus, sizeof corpus, "%s/bad.jsonl", f->root);
    write_corpus(corpus, 30, 4, 14, 0);
    splade_ingest_opts_init(&io);
    assert_int_equal(ingest_rc(f, corpus, 4, &io, &n), SPLADE_ERR_FORMAT);
    assert_non_null(strstr(splade_error_detail(), "bad.jsonl:14:"));

    splade_ingest_opts_init(&io);
    io.skip_invalid = 1;
    assert_int_equal(ingest_rc(f, corpus, 4, &io, &n), SPLADE_OK);
    assert_int_equal(io.skipped, 1);
    assert_int_equal(n, 29);

    snprintf(corpus, sizeof corpus, "%s/empty.jsonl", f->root);
    write_corpus(corpus, 0, 5, 0, 0);
    splade_ingest_opts_init(&io);
    assert_int_equal(ingest_rc(f, corpus, 4, &io, &n), SPLADE_ERR_FORMAT); /* "holds no documents" */
    assert_non_null(strstr(splade_error_detail(), "no documents"));
}

/* The warm-up: nothing for the CPU or NULL options; AUTO on a machine without a usable GPU starts a
 * thread that finds none, and the encoder created after it falls back to the CPU as before. */
static void test_warm_up_without_gpu(void **state)
{
    fixture *f = *state;
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CPU;
    assert_null(splade_encoder_warm_start(&o));
    assert_null(splade_encoder_warm_start(NULL));
    splade_encoder_warm_finish(NULL);
    char name[256];
    if (splade_gpu_probe(name, sizeof name))
        skip(); /* a GPU is here: the GPU machine's bench runs this path (bench/gpu_pipeline.sh) */
    o.device = SPLADE_DEVICE_AUTO;
    o.quiet = 1;
    splade_gpu_warmup *w = splade_encoder_warm_start(&o);
    splade_encoder_warm_finish(w);
    splade_encoder *e;
    assert_int_equal(splade_encoder_create(f->m, &o, &e), SPLADE_OK);
    assert_int_equal(splade_encoder_device(e), SPLADE_DEVICE_CPU);
    splade_encoder_free(e);
    o.device = SPLADE_DEVICE_CUDA;
    o.n_devices = 2;
    o.devices[0] = 0;
    o.devices[1] = 1;
    splade_encoder_warm_finish(splade_encoder_warm_start(&o)); /* a list: a context each, none here */
}

int main(void)
{
    /* corpus lines parsed on 3 threads (src/common/corpus_batch.h) whatever this machine's CPU count,
     * against the serial reference's splade_corpus_next */
    setenv("SPLADE_PARSE_THREADS", "3", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_matches_serial),
        cmocka_unit_test(test_pipeline_matches_serial_segments),
        cmocka_unit_test(test_pipeline_errors),
        cmocka_unit_test(test_warm_up_without_gpu),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
