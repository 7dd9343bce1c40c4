/* The library is quiet and explicitly configured (docs/CONTRIBUTING.md, "A quiet library"):
 * with no callback set it writes nothing to stderr; what it used to print (the encoder's device
 * notice, a skipped input line) reaches the log callback with its level, a build's progress the
 * callback in its options (done < total until the last call, which has done == total), and the
 * kernel knobs are read once from the environment (splade_settings_reload re-reads them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/settings.h"
#include "model_fixture.h"
#include "splade.h"
#include "splade/build.h"
#include "splade/encoder.h"
#include "splade/index.h"
#include "splade/model.h"
#include "splade/pipeline.h"
#include "splade/segments.h"

/* ---- helpers ------------------------------------------------------------------------------- */

typedef struct {
    int n;
    int level[16];
    char msg[16][512];
} log_record;

static void record_log(void *user, int level, const char *msg)
{
    log_record *r = user;
    if (r->n < 16) {
        r->level[r->n] = level;
        snprintf(r->msg[r->n], sizeof r->msg[r->n], "%s", msg);
    }
    r->n++;
}

static char *write_temp(const char *text)
{
    char *path = strdup("/tmp/splade_quiet_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

/* Vectors input: five documents, the third line malformed. */
static const char VECTORS[] = "{\"id\": \"a\", \"vector\": {\"x\": 1.0}}\n"
                              "{\"id\": \"b\", \"vector\": {\"y\": 2.0}}\n"
                              "not json\n"
                              "{\"id\": \"c\", \"vector\": {\"x\": 0.5, \"z\": 1.0}}\n"
                              "{\"id\": \"d\", \"vector\": {\"z\": 3.0}}\n"
                              "{\"id\": \"e\", \"vector\": {\"y\": 1.0}}\n";

static int ingest(const char *path, splade_ingest_opts *io)
{
    splade_index_builder *b;
    assert_int_equal(splade_builder_create(NULL, 0, NULL, &b), SPLADE_OK);
    int rc = splade_ingest_vectors(b, path, io);
    splade_builder_free(b);
    return rc;
}

/* What used to print: an AUTO encoder's device notice and a skipped line of a build. */
static void run_noisy_operations(void)
{
    char *dir = fx_make(&(fx_opts){.lowercase = 1});
    splade_model *m;
    assert_int_equal(splade_model_load(dir, &m), SPLADE_OK);
    splade_encoder *e;
    splade_encoder_opts o = {.device = SPLADE_DEVICE_AUTO};
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    splade_encoder_free(e);
    splade_model_free(m);
    fx_remove(dir);
    char *path = write_temp(VECTORS);
    splade_ingest_opts io = {.skip_invalid = 1};
    assert_int_equal(ingest(path, &io), SPLADE_OK);
    assert_int_equal(io.skipped, 1);
    unlink(path);
    free(path);
}

/* ---- tests ----------------------------------------------------------------------------------- */

/* No callback: not a byte on stderr (fd 2 is pointed at a file while the library runs). */
static void test_silent_by_default(void **state)
{
    (void)state;
    splade_set_log(NULL, NULL);
    char *err = write_temp("");
    fflush(stderr);
    int saved = dup(2), fd = open(err, O_WRONLY | O_TRUNC);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    run_noisy_operations();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(err, "r");
    char buf[512] = "";
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    unlink(err);
    free(err);
    if (got)
        fail_msg("the library wrote to stderr with no log callback set: %s", buf);
}

/* The device notice (info) and the skipped line (warning, naming file and line) reach the callback. */
static void test_log_callback_receives_messages(void **state)
{
    (void)state;
    log_record r = {0};
    splade_set_log(record_log, &r);
    run_noisy_operations();
    splade_set_log(NULL, NULL);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.level[0], SPLADE_LOG_INFO);
    if (strncmp(r.msg[0], "encoding on the ", 16) && strncmp(r.msg[0], "GPU encoder unavailable", 23))
        fail_msg("device notice: \"%s\"", r.msg[0]);
    assert_int_equal(r.level[1], SPLADE_LOG_WARNING);
    assert_non_null(strstr(r.msg[1], "skipped: /tmp/splade_quiet_"));
    assert_non_null(strstr(r.msg[1], ":3: "));
    /* a quiet encoder says nothing */
    r.n = 0;
    splade_set_log(record_log, &r);
    char *dir = fx_make(&(fx_opts){.lowercase = 1});
    splade_model *m;
    assert_int_equal(splade_model_load(dir, &m), SPLADE_OK);
    splade_encoder *e;
    splade_encoder_opts o = {.device = SPLADE_DEVICE_AUTO, .quiet = 1};
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    splade_set_log(NULL, NULL);
    assert_int_equal(r.n, 0);
    splade_encoder_free(e);
    splade_model_free(m);
    fx_remove(dir);
}

typedef struct {
    int calls, finals;
    uint64_t last_done, last_total;
    int bad;
} progress_record;

static void record_progress(void *user, const char *stage, uint64_t done, uint64_t total)
{
    progress_record *p = user;
    p->calls++;
    if (strcmp(stage, "documents") || done < p->last_done || p->finals)
        p->bad = 1; /* one stage, counting up, nothing after the last call */
    if (done == total)
        p->finals++;
    p->last_done = done;
    p->last_total = total;
}

static void check_progress(const char *text, uint64_t docs)
{
    char *path = write_temp(text);
    progress_record p = {0};
    splade_ingest_opts io = {.skip_invalid = 1, .progress = record_progress, .progress_user = &p};
    assert_int_equal(ingest(path, &io), SPLADE_OK);
    unlink(path);
    free(path);
    assert_int_equal(p.bad, 0);
    assert_true(p.calls >= 2);
    assert_int_equal(p.finals, 1);
    assert_int_equal(p.last_done, docs);
    assert_int_equal(p.last_total, docs);
}

/* A build reports each document; total is the input's line count until the last call. */
static void test_progress_callback(void **state)
{
    (void)state;
    check_progress(VECTORS, 5);
    /* the last line without a newline: more documents than counted lines, still one final call */
    char text[sizeof VECTORS];
    snprintf(text, sizeof text, "%s", VECTORS);
    text[strlen(text) - 1] = '\0';
    check_progress(text, 5);
}

/* The kernels' knobs: read once; a test that changes one re-reads them explicitly. */
static void test_settings_read_once(void **state)
{
    (void)state;
    unsetenv("SPLADE_LMHEAD_GROUP");
    unsetenv("SPLADE_GPU_FFN_CHUNK");
    splade_settings_reload();
    assert_int_equal(splade_settings_get()->lmhead_group, 0);
    setenv("SPLADE_LMHEAD_GROUP", "7", 1);
    setenv("SPLADE_GPU_FFN_CHUNK", "200", 1);
    assert_int_equal(splade_settings_get()->lmhead_group, 0); /* not re-read behind the caller's back */
    splade_settings_reload();
    assert_int_equal(splade_settings_get()->lmhead_group, 7);
    assert_int_equal(splade_settings_get()->gpu_ffn_chunk, 256);
    unsetenv("SPLADE_LMHEAD_GROUP");
    unsetenv("SPLADE_GPU_FFN_CHUNK");
    splade_settings_reload();
}

/* The build time is an option: $SOURCE_DATE_EPOCH is the CLI's business, not the library's. */
static void test_build_time_option(void **state)
{
    (void)state;
    setenv("SOURCE_DATE_EPOCH", "1234", 1);
    char dir[] = "/tmp/splade_quiet_ix_XXXXXX";
    assert_non_null(mkdtemp(dir));
    for (int fixed = 0; fixed < 2; fixed++) {
        splade_index_builder *b;
        assert_int_equal(splade_builder_create(NULL, 0, NULL, &b), SPLADE_OK);
        uint32_t doc;
        int32_t t;
        float w = 1.0f;
        assert_int_equal(splade_builder_add_doc(b, "t", "d1", "", "", 1, &doc), SPLADE_OK);
        assert_int_equal(splade_builder_term(b, "x", 1, &t), SPLADE_OK);
        assert_int_equal(splade_builder_set_vector(b, doc, &t, &w, 1), SPLADE_OK);
        if (fixed)
            splade_builder_set_build_time(b, 1700000000);
        splade_build_stats st;
        assert_int_equal(splade_builder_write(b, dir, &st), SPLADE_OK);
        splade_builder_free(b);
        splade_index *ix;
        assert_int_equal(splade_index_open(dir, &ix), SPLADE_OK);
        const uint64_t when = splade_index_get_info(ix)->build_time;
        splade_index_close(ix);
        if (fixed)
            assert_int_equal(when, 1700000000);
        else
            assert_true(when > 1700000000); /* now, not the environment's 1234 */
    }
    unsetenv("SOURCE_DATE_EPOCH");
    char p[128];
    snprintf(p, sizeof p, "%s/" SPLADE_INDEX_FILE, dir);
    unlink(p);
    rmdir(dir);
}

/* The *_opts_init functions reset every field to its documented default, whatever the struct held
 * (callers init first, then set what they know; later fields keep their defaults). Byte patterns: a
 * field an init forgets keeps 0xAB, which no default is. */
static void test_opts_init_defaults(void **state)
{
    (void)state;
    splade_encoder_opts e;
    memset(&e, 0xAB, sizeof e);
    splade_encoder_opts_init(&e);
    assert_int_equal(e.device, SPLADE_DEVICE_AUTO);
    assert_int_equal(e.lmhead, SPLADE_LMHEAD_FUSED);
    assert_int_equal(e.precision, SPLADE_PRECISION_BF16);
    assert_int_equal(e.threads, 0);
    assert_int_equal(e.max_length, 0);
    assert_int_equal(e.batch_size, 0);
    assert_true(e.threshold == 0.0f);
    assert_int_equal(e.top_k, 0);
    assert_int_equal(e.quiet, 0);
    assert_int_equal(e.max_batch_tokens, 0);
    assert_int_equal(e.gpu_dense_output, 0);
    assert_int_equal(e.cpu_batch_bytes, 0);

    splade_ingest_opts i;
    memset(&i, 0xAB, sizeof i);
    splade_ingest_opts_init(&i);
    assert_int_equal(i.skip_invalid, 0);
    assert_int_equal(i.allow_empty, 0);
    assert_int_equal(i.skipped, 0);
    assert_null(i.progress);
    assert_null(i.progress_user);
    assert_null(i.cancel);
    assert_null(e.cancel);

    splade_add_opts a;
    memset(&a, 0xAB, sizeof a);
    splade_add_opts_init(&a);
    assert_int_equal(a.update, 0);
    assert_int_equal(a.no_merge, 0);
    assert_int_equal(a.max_segments, 0);
    assert_int_equal(a.threads, 0);

    splade_fetch_opts f;
    memset(&f, 0xAB, sizeof f);
    splade_fetch_opts_init(&f);
    assert_null(f.dest);
    assert_null(f.cache_dir);
    assert_null(f.endpoint);
    assert_null(f.token);
    assert_null(f.progress);
    assert_null(f.progress_user);

    splade_query_encode_opts q;
    memset(&q, 0xAB, sizeof q);
    splade_query_encode_opts_init(&q);
    assert_null(q.model);
    assert_null(q.device);
    assert_null(q.precision);
    assert_int_equal(q.threads, 0);
    assert_null(q.model_paths);
    assert_int_equal(q.max_batch_tokens, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silent_by_default),
        cmocka_unit_test(test_opts_init_defaults),
        cmocka_unit_test(test_log_callback_receives_messages),
        cmocka_unit_test(test_progress_callback),
        cmocka_unit_test(test_settings_read_once),
        cmocka_unit_test(test_build_time_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
