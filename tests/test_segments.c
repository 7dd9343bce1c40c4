/* A living index (include/splade/segments.h): random sequences of add, delete, update and merge on a
 * segmented --vectors index, after each of which every search method (bmm, maxscore, taat, bmp,
 * wmaxscore; several k) must answer exactly like ONE index built from the same live documents in
 * the order they were added, with the same doc_scale: the same ids at the same ranks, the same
 * integer scores (heavy ties included: they go to the document added first). A reader that opened
 * a generation keeps answering from it while writers replace it. Also the bad-input paths: add to a
 * missing folder, duplicate ids, unknown ids (--strict), a vocabulary of another kind, a damaged
 * MANIFEST, a missing segment, a damaged deletion file, two writers at once. */
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

#include "index/builder_internal.h"
#include "splade.h"
#include "tmp_dir.h"
#include "xorshift.h"
#include "splade/build.h"
#include "splade/index.h"
#include "splade/query.h"
#include "splade/segments.h"

#define VOCAB 300
#define MAX_TERMS 24

typedef struct {
    char id[24];
    int n;
    int32_t tok[MAX_TERMS]; /* token "w<tok>" */
    float w[MAX_TERMS];
} vdoc;

typedef struct {
    vdoc *d;
    int n, cap;
} doc_list;


static int next_id;

/* A document: few distinct tokens, weights from a small set (ties) or continuous; `heavy` doubles
 * them (above the index's doc_scale: clipped at 255 in both indexes). */
static void random_doc(vdoc *v, const char *id, int coarse, int heavy)
{
    snprintf(v->id, sizeof v->id, "%s", id);
    int want = 1 + (int)(rnd() % MAX_TERMS);
    v->n = 0;
    for (int i = 0; i < want; i++) {
        uint32_t a = rnd() % VOCAB, b = rnd() % VOCAB;
        int32_t t = (int32_t)(a < b ? a : b);
        int seen = 0;
        for (int j = 0; j < v->n; j++)
            seen |= v->tok[j] == t;
        if (seen)
            continue;
        v->tok[v->n] = t;
        v->w[v->n++] = (coarse ? (float)(1 + rnd() % 4) * 0.5f : 2.0f * (float)(1 + rnd() % 10000) / 10000.0f) *
                       (heavy ? 2.0f : 1.0f);
    }
}

static void list_push(doc_list *l, const vdoc *v)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->d = realloc(l->d, (size_t)l->cap * sizeof *l->d);
    }
    l->d[l->n++] = *v;
}

static int list_find(const doc_list *l, const char *id)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->d[i].id, id))
            return i;
    return -1;
}

static void list_remove(doc_list *l, int i)
{
    memmove(l->d + i, l->d + i + 1, (size_t)(l->n - i - 1) * sizeof *l->d);
    l->n--;
}

static splade_index_builder *builder_of(const vdoc *docs, int n)
{
    splade_index_builder *b;
    assert_int_equal(splade_builder_create(NULL, 0, NULL, &b), 0);
    for (int i = 0; i < n; i++) {
        uint32_t doc;
        int32_t terms[MAX_TERMS];
        assert_int_equal(splade_builder_add_doc(b, "test", docs[i].id, "", docs[i].id, i + 1, &doc), 0);
        for (int j = 0; j < docs[i].n; j++) {
            char tok[16];
            snprintf(tok, sizeof tok, "w%d", docs[i].tok[j]);
            assert_int_equal(splade_builder_term(b, tok, strlen(tok), &terms[j]), 0);
        }
        assert_int_equal(splade_builder_set_vector(b, doc, terms, docs[i].w, docs[i].n), 0);
    }
    splade_builder_set_threads(b, 1 + (int)(rnd() % 2));
    return b;
}

/* The reference: one index of the live documents, in the order they were added. */
static void build_reference(const doc_list *live, float scale, const char *dir)
{
    splade_index_builder *b = builder_of(live->d, live->n);
    assert_int_equal(splade_builder_set_doc_scale(b, scale), 0);
    splade_builder_keep_order(b, (int)(rnd() % 2));
    splade_builder_allow_empty(b, 1);
    assert_int_equal(splade_builder_write(b, dir, NULL), 0);
    splade_builder_free(b);
}

typedef struct {
    int n;
    char tok[40][16];
    float w[40];
} vquery;

static void random_query(vquery *q)
{
    q->n = 1 + (int)(rnd() % 12);
    for (int i = 0; i < q->n; i++) {
        uint32_t t = rnd() % (VOCAB + 20); /* some tokens no document has */
        snprintf(q->tok[i], sizeof q->tok[i], "w%u", t);
        q->w[i] = rnd() % 2 ? (float)(1 + rnd() % 3) : (float)(1 + rnd() % 1000) / 300.0f;
    }
}

static void qvec_for(splade_index *ix, const vquery *vq, splade_qvec *q)
{
    int32_t terms[40];
    for (int i = 0; i < vq->n; i++)
        terms[i] = splade_index_term_lookup(ix, vq->tok[i], strlen(vq->tok[i]));
    assert_int_equal(splade_qvec_build(terms, vq->w, vq->n, splade_index_get_info(ix)->n_terms, q), 0);
}

typedef struct {
    int n;
    char id[100][24];
    uint32_t score[100];
} answer;

static void search(splade_index *ix, const vquery *vq, int algo, int k, answer *a)
{
    splade_qvec q;
    qvec_for(ix, vq, &q);
    splade_searcher *s;
    splade_hit hits[100];
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    assert_int_equal(splade_search(s, &q, k, (splade_algo)algo, hits, &a->n), 0);
    for (int i = 0; i < a->n; i++) {
        size_t len;
        const char *id = splade_index_doc_id(ix, hits[i].doc, &len);
        snprintf(a->id[i], sizeof a->id[i], "%.*s", (int)len, id);
        a->score[i] = hits[i].score;
    }
    splade_searcher_free(s);
    splade_qvec_free(&q);
}

static void same_answers(const answer *got, const answer *want, const char *what, int algo, int k)
{
    if (got->n != want->n)
        fail_msg("%s: algo %d k=%d: %d hits, the reference %d", what, algo, k, got->n, want->n);
    for (int i = 0; i < got->n; i++)
        if (strcmp(got->id[i], want->id[i]) || got->score[i] != want->score[i])
            fail_msg("%s: algo %d k=%d rank %d: %s (%u), the reference %s (%u)", what, algo, k, i, got->id[i],
                     got->score[i], want->id[i], want->score[i]);
}

/* The segmented index answers like the reference built from `live`; its documents are `live`. */
static void check_equal(const char *dir, const doc_list *live, const char *what)
{
    splade_index *ix, *ref;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    const splade_index_info *in = splade_index_get_info(ix);
    assert_int_equal(in->n_docs, (uint32_t)live->n);
    for (uint32_t d = 0; d < in->n_docs; d++) { /* ids 0..n_docs-1 are exactly the live documents */
        size_t len;
        const char *id = splade_index_doc_id(ix, d, &len);
        char buf[32];
        snprintf(buf, sizeof buf, "%.*s", (int)len, id);
        if (list_find(live, buf) < 0)
            fail_msg("%s: document %u is \"%s\", not a live document", what, d, buf);
    }
    char *rdir = td_make("splade_test_seg");
    build_reference(live, in->doc_scale, rdir);
    assert_int_equal(splade_index_open(rdir, &ref), 0);
    assert_true(splade_index_get_info(ref)->doc_scale == in->doc_scale || live->n == 0);
    static const int ks[] = {1, 3, 10, 64, 100};
    for (int qi = 0; qi < 12; qi++) {
        vquery vq;
        random_query(&vq);
        for (int algo = 0; algo <= SPLADE_ALGO_AUTO; algo++)
            for (int ki = 0; ki < 5; ki++) {
                answer got, want;
                search(ix, &vq, algo, ks[ki], &got);
                search(ref, &vq, algo, ks[ki], &want);
                same_answers(&got, &want, what, algo, ks[ki]);
            }
    }
    splade_index_close(ref);
    splade_index_close(ix);
    td_free(rdir);
}

static int batch_size(void)
{
    return rnd() % 6 == 0 ? 1100 + (int)(rnd() % 300) : 1 + (int)(rnd() % 300); /* >= 1024: reordered */
}

static void op_add(const char *dir, doc_list *live, int update)
{
    int n = batch_size(), coarse = (int)(rnd() % 2), heavy = rnd() % 5 == 0;
    vdoc *docs = calloc((size_t)n, sizeof *docs);
    int replaced = 0;
    for (int i = 0; i < n; i++) {
        char id[24];
        if (update && live->n && rnd() % 2) { /* an id already live (once per batch) */
            int j = (int)(rnd() % (uint32_t)live->n), dup = 0;
            for (int x = 0; x < i; x++)
                dup |= !strcmp(docs[x].id, live->d[j].id);
            if (dup)
                snprintf(id, sizeof id, "d%d", next_id++);
            else
                snprintf(id, sizeof id, "%s", live->d[j].id), replaced++;
        } else {
            snprintf(id, sizeof id, "d%d", next_id++);
        }
        random_doc(&docs[i], id, coarse, heavy);
    }
    splade_index_builder *b = builder_of(docs, n);
    splade_add_opts o = {.update = update, .no_merge = rnd() % 2, .max_segments = 3 + (int)(rnd() % 3)};
    splade_add_stats st;
    int rc = splade_index_add(b, dir, &o, &st);
    if (rc < 0)
        fail_msg("add: %s", splade_error_detail());
    assert_int_equal(st.n_added, (uint32_t)n);
    assert_int_equal(st.n_replaced, (uint32_t)replaced);
    splade_builder_free(b);
    for (int i = 0; i < n; i++) { /* update = delete + add: the new version gets a new sequence number */
        int at = list_find(live, docs[i].id);
        if (at >= 0)
            list_remove(live, at);
        list_push(live, &docs[i]);
    }
    free(docs);
}

static void op_delete(const char *dir, doc_list *live)
{
    int n = live->n ? 1 + (int)(rnd() % (uint32_t)(live->n < 200 ? live->n : 200)) : 0;
    char **ids = calloc((size_t)n + 2, sizeof *ids);
    int known = 0;
    for (int i = 0; i < n; i++) {
        ids[i] = strdup(live->d[rnd() % (uint32_t)live->n].id);
    }
    ids[n] = strdup("no-such-id");
    for (int i = 0; i < n; i++) {
        int at = list_find(live, ids[i]);
        if (at >= 0) {
            list_remove(live, at);
            known++;
        }
    }
    splade_delete_stats st;
    assert_int_equal(splade_index_delete(dir, (const char *const *)ids, (size_t)n + 1, 0, &st), 0);
    assert_int_equal(st.n_deleted, (uint32_t)known);
    assert_int_equal(st.n_unknown, 1); /* a repeated id counts once */
    assert_non_null(strstr(st.unknown, "\"no-such-id\""));
    for (int i = 0; i <= n; i++)
        free(ids[i]);
    free(ids);
}

static void op_merge(const char *dir)
{
    splade_merge_stats st;
    int max = rnd() % 2 ? 0 : 1 + (int)(rnd() % 3);
    int rc = splade_index_merge(dir, max, 1 + (int)(rnd() % 2), &st);
    if (rc < 0)
        fail_msg("merge: %s", splade_error_detail());
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    if (max > 0)
        assert_true(splade_index_segment_count(ix) <= max);
    else
        assert_int_equal(splade_index_segment_count(ix), 1);
    splade_index_close(ix);
}

/* Only MANIFEST and the files it names (and no lock, no temporary) are left in the folder. */
static void check_no_strays(const char *dir)
{
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    int named = splade_index_generation(ix) > 0; /* MANIFEST (none yet: a single index.spx) */
    for (int i = 0; i < splade_index_segment_count(ix); i++) {
        splade_segment_info si;
        assert_int_equal(splade_index_segment_info(ix, i, &si), 0);
        named += 1 + (si.deletions[0] != 0);
    }
    splade_index_close(ix);
    DIR *d = opendir(dir);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));)
        files += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    assert_int_equal(files, named);
}

/* Random operations; after each one the index equals a fresh single build, and a reader opened
 * before the operation still answers as before it. */
static void run_seed(uint64_t seed)
{
    rng = seed * 0x9E3779B97F4A7C15ull + 7;
    next_id = 0;
    doc_list live = {0};
    char *dir = td_make("splade_test_seg");
    int n0 = batch_size();
    for (int i = 0; i < n0; i++) {
        vdoc v;
        char id[24];
        snprintf(id, sizeof id, "d%d", next_id++);
        random_doc(&v, id, (int)(seed % 2), 0);
        list_push(&live, &v);
    }
    splade_index_builder *b = builder_of(live.d, live.n);
    assert_int_equal(splade_builder_write(b, dir, NULL), 0); /* a single-file index, converted by the first op */
    splade_builder_free(b);
    check_equal(dir, &live, "build");
    for (int op = 0; op < 9; op++) {
        splade_index *before;
        assert_int_equal(splade_index_open(dir, &before), 0);
        vquery vq;
        random_query(&vq);
        answer a0, a1;
        search(before, &vq, 3, 10, &a0);
        uint32_t r = rnd() % 8;
        char what[64];
        snprintf(what, sizeof what, "seed %llu op %d (%s)", (unsigned long long)seed, op,
                 r < 3 ? "add" : r < 5 ? "delete" : r < 7 ? "update" : "merge");
        if (r < 3)
            op_add(dir, &live, 0);
        else if (r < 5)
            op_delete(dir, &live);
        else if (r < 7)
            op_add(dir, &live, 1);
        else
            op_merge(dir);
        search(before, &vq, 3, 10, &a1); /* its files may be gone from the folder: still mapped */
        same_answers(&a1, &a0, "an open reader across a write", 3, 10);
        splade_index_close(before);
        check_equal(dir, &live, what);
        check_no_strays(dir);
    }
    op_merge(dir);
    check_equal(dir, &live, "final merge");
    free(live.d);
    td_free(dir);
}

static void test_random_operations_match_single_build(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 8; seed++)
        run_seed(seed);
}

/* ---- bad input ---- */

static uint64_t generation_of(const char *dir)
{
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    uint64_t g = splade_index_generation(ix);
    splade_index_close(ix);
    return g;
}

static char *small_index(int segments)
{
    char *dir = td_make("splade_test_seg");
    rng = 12345;
    vdoc docs[40];
    for (int i = 0; i < 40; i++) {
        char id[24];
        snprintf(id, sizeof id, "s%d", i);
        random_doc(&docs[i], id, 0, 0);
    }
    splade_index_builder *b = builder_of(docs, 20);
    assert_int_equal(splade_builder_write(b, dir, NULL), 0);
    splade_builder_free(b);
    for (int s = 1; s < segments; s++) {
        b = builder_of(docs + 20 + (s - 1) * 5, 5);
        splade_add_opts o = {.no_merge = 1};
        assert_int_equal(splade_index_add(b, dir, &o, NULL), 0);
        splade_builder_free(b);
    }
    return dir;
}

static void test_add_to_missing_index(void **state)
{
    (void)state;
    char *dir = td_make("splade_test_seg");
    char missing[4096];
    snprintf(missing, sizeof missing, "%s/nothing", dir);
    vdoc v;
    random_doc(&v, "x", 0, 0);
    splade_index_builder *b = builder_of(&v, 1);
    assert_int_equal(splade_builder_lock(b, missing), 0); /* as the CLI does: the lock creates the folder */
    assert_int_equal(splade_index_add(b, missing, NULL, NULL), SPLADE_ERR_NOT_FOUND);
    assert_non_null(strstr(splade_error_detail(), "no index here"));
    assert_non_null(strstr(splade_error_detail(), "build"));
    splade_builder_free(b);
    struct stat st;
    assert_int_not_equal(stat(missing, &st), 0); /* the folder it made is gone again */
    assert_int_equal(splade_index_delete(missing, (const char *[]){"x"}, 1, 0, NULL), SPLADE_ERR_NOT_FOUND);
    assert_int_equal(splade_index_merge(missing, 0, 1, NULL), SPLADE_ERR_IO);
    td_free(dir);
}

static void test_duplicate_id_refused_unless_update(void **state)
{
    (void)state;
    char *dir = small_index(2);
    uint64_t g = generation_of(dir);
    vdoc v[2];
    random_doc(&v[0], "new1", 0, 0);
    random_doc(&v[1], "s3", 0, 0); /* live in the first segment (index.spx) */
    splade_index_builder *b = builder_of(v, 2);
    assert_int_equal(splade_index_add(b, dir, NULL, NULL), SPLADE_ERR_DUPLICATE);
    const char *e = splade_error_detail();
    if (!strstr(e, "\"s3\"") || !strstr(e, "test:2:") || !strstr(e, "index.spx") || !strstr(e, "update"))
        fail_msg("the error does not name the id, its line, the segment and `update`: %s", e);
    assert_int_equal(generation_of(dir), g); /* nothing written */
    splade_add_opts o = {.update = 1, .no_merge = 1};
    splade_add_stats st;
    assert_int_equal(splade_index_add(b, dir, &o, &st), 0);
    assert_int_equal(st.n_replaced, 1);
    splade_builder_free(b);
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    assert_int_equal(splade_index_get_info(ix)->n_docs, 20 + 5 + 1);
    splade_index_close(ix);
    td_free(dir);
}

static void test_delete_unknown_ids(void **state)
{
    (void)state;
    char *dir = small_index(2);
    uint64_t g = generation_of(dir);
    const char *ids[] = {"s1", "nope1", "s2", "nope2", "s1"};
    splade_delete_stats st;
    assert_int_equal(splade_index_delete(dir, ids, 5, 1, &st), SPLADE_ERR_NOT_FOUND);
    assert_non_null(strstr(splade_error_detail(), "\"nope1\""));
    assert_non_null(strstr(splade_error_detail(), "nothing deleted"));
    assert_int_equal(generation_of(dir), g);
    assert_int_equal(splade_index_delete(dir, ids, 5, 0, &st), 0);
    assert_int_equal(st.n_deleted, 2);
    assert_int_equal(st.n_unknown, 2);
    assert_int_equal(st.generation, g + 1);
    assert_int_equal(splade_index_delete(dir, ids, 1, 0, &st), 0); /* already deleted: unknown, no change */
    assert_int_equal(st.n_deleted, 0);
    assert_int_equal(st.n_unknown, 1);
    assert_int_equal(generation_of(dir), g + 1);
    td_free(dir);
}

static void test_vocabulary_kind_mismatch(void **state)
{
    (void)state;
    char *dir = small_index(1);
    const char *tokens[] = {"a", "b"};
    splade_index_model m = {"fake", "/nowhere", 42, 1, 16, 0};
    splade_index_builder *b;
    assert_int_equal(splade_builder_create(tokens, 2, &m, &b), 0);
    uint32_t doc;
    assert_int_equal(splade_builder_add_doc(b, "t", "m1", "", "", 1, &doc), 0);
    assert_int_equal(splade_builder_set_vector(b, doc, (int32_t[]){1}, (float[]){1.0f}, 1), 0);
    assert_int_equal(splade_index_add(b, dir, NULL, NULL), SPLADE_ERR_MISMATCH);
    assert_non_null(strstr(splade_error_detail(), "--vectors"));
    splade_builder_free(b);
    /* a fixed vocabulary without a model (the library's builder over given tokens, as bench_index
     * builds) is another kind than --vectors' growing one: refused before anything is written */
    uint64_t g = generation_of(dir);
    assert_int_equal(splade_builder_create(tokens, 2, NULL, &b), 0);
    assert_int_equal(splade_builder_add_doc(b, "t", "f1", "", "", 1, &doc), 0);
    assert_int_equal(splade_builder_set_vector(b, doc, (int32_t[]){1}, (float[]){1.0f}, 1), 0);
    assert_int_equal(splade_index_add(b, dir, NULL, NULL), SPLADE_ERR_MISMATCH);
    assert_non_null(strstr(splade_error_detail(), "fixed vocabulary"));
    assert_int_equal(generation_of(dir), g);
    splade_builder_free(b);
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0); /* still opens */
    splade_index_close(ix);
    td_free(dir);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_damaged_manifest_and_files(void **state)
{
    (void)state;
    char *dir = small_index(3);
    const char *ids[] = {"s21"};
    assert_int_equal(splade_index_delete(dir, ids, 1, 0, NULL), 0);
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    splade_segment_info si;
    assert_int_equal(splade_index_segment_info(ix, 1, &si), 0);
    char seg[64], del[64];
    snprintf(seg, sizeof seg, "%s", si.file);
    snprintf(del, sizeof del, "%s", si.deletions);
    assert_true(del[0] != 0);
    splade_index_close(ix);
    char path[4096], saved[4096];
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    snprintf(saved, sizeof saved, "%s/manifest.saved", dir);
    assert_int_equal(rename(path, saved), 0);
    write_file(dir, "MANIFEST", "{\"version\": 1, \"generation\": ");
    assert_int_equal(splade_index_open(dir, &ix), SPLADE_ERR_FORMAT);
    assert_non_null(strstr(splade_error_detail(), "MANIFEST"));
    vdoc v;
    random_doc(&v, "x1", 0, 0);
    splade_index_builder *b = builder_of(&v, 1);
    assert_int_equal(splade_index_add(b, dir, NULL, NULL), SPLADE_ERR_FORMAT); /* refused, nothing written */
    write_file(dir, "MANIFEST", "{\"version\": 1, \"generation\": 3, \"next_seq\": 30, \"doc_scale\": 0.01, "
                                "\"model\": null, \"segments\": [{\"file\": \"../x.spx\", \"n_docs\": 1, \"seq_base\": 0, "
                                "\"deletions\": null, \"n_deleted\": 0}]}");
    assert_int_equal(splade_index_open(dir, &ix), SPLADE_ERR_FORMAT);
    assert_non_null(strstr(splade_error_detail(), "\"file\""));
    assert_int_equal(rename(saved, path), 0);
    /* a damaged deletion file */
    snprintf(path, sizeof path, "%s/%s", dir, del);
    FILE *f = fopen(path, "r+b");
    fseek(f, 30, SEEK_SET);
    fputc(0x55, f);
    fclose(f);
    assert_int_equal(splade_index_open(dir, &ix), SPLADE_ERR_CHECKSUM);
    assert_non_null(strstr(splade_error_detail(), del));
    assert_int_equal(splade_index_add(b, dir, NULL, NULL), SPLADE_ERR_CHECKSUM);
    /* a missing file the manifest names (the generation does not move: reported, no endless retry) */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(splade_index_open(dir, &ix), SPLADE_ERR_NOT_FOUND);
    assert_non_null(strstr(splade_error_detail(), del));
    snprintf(path, sizeof path, "%s/%s", dir, seg);
    assert_int_equal(unlink(path), 0);
    splade_builder_free(b);
    td_free(dir);
}

static void test_two_writers(void **state)
{
    (void)state;
    char *dir = small_index(2);
    vdoc v;
    random_doc(&v, "w1", 0, 0);
    splade_index_builder *b = builder_of(&v, 1);
    assert_int_equal(splade_builder_lock(b, dir), 0); /* an add in progress */
    const char *ids[] = {"s1"};
    assert_int_equal(splade_index_delete(dir, ids, 1, 0, NULL), SPLADE_ERR_IO);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld ", (long)getpid());
    assert_non_null(strstr(splade_error_detail(), "is writing this index"));
    assert_non_null(strstr(splade_error_detail(), pid));
    assert_int_equal(splade_index_merge(dir, 0, 1, NULL), SPLADE_ERR_IO);
    splade_add_opts o = {.no_merge = 1};
    assert_int_equal(splade_index_add(b, dir, &o, NULL), 0); /* the holder itself goes on */
    splade_builder_free(b);
    assert_int_equal(splade_index_delete(dir, ids, 1, 0, NULL), 0); /* released */
    td_free(dir);
}

/* ---- bounded builds and the merge policy ---- */

/* n random documents into a builder bounded at `memory` bytes over dir, with the given policy. */
static splade_index_builder *bounded_builder(const char *dir, const doc_list *docs, uint64_t memory, int policy)
{
    splade_index_builder *b;
    assert_int_equal(splade_builder_create(NULL, 0, NULL, &b), 0);
    assert_int_equal(splade_builder_set_memory(b, dir, memory, 0), 0);
    splade_builder_set_merge_policy(b, policy);
    for (int i = 0; i < docs->n; i++) {
        uint32_t doc;
        int32_t terms[MAX_TERMS];
        assert_int_equal(splade_builder_add_doc(b, "test", docs->d[i].id, "", docs->d[i].id, i + 1, &doc), 0);
        for (int j = 0; j < docs->d[i].n; j++) {
            char tok[16];
            snprintf(tok, sizeof tok, "w%d", docs->d[i].tok[j]);
            assert_int_equal(splade_builder_term(b, tok, strlen(tok), &terms[j]), 0);
        }
        assert_int_equal(splade_builder_set_vector(b, doc, terms, docs->d[i].w, docs->d[i].n), 0);
    }
    return b;
}

static int segments_of(const char *dir)
{
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    int n = splade_index_segment_count(ix);
    splade_index_close(ix);
    return n;
}

/* A bounded build that writes many segments: with the policy off they all stay (one generation);
 * with a limit of 3 the smallest are merged by the streaming merge into one, in the next
 * generation, and 3 remain; both answer like one in-memory build of the same documents. */
static void test_bounded_build_merge_policy(void **state)
{
    (void)state;
    rng = 777;
    doc_list docs = {0};
    for (int i = 0; i < 3000; i++) {
        vdoc v;
        char id[24];
        snprintf(id, sizeof id, "b%d", i);
        random_doc(&v, id, (int)(rnd() % 2), 0);
        list_push(&docs, &v);
    }
    for (int policy = -1; policy <= 3; policy += 4) {
        char *dir = td_make("splade_test_seg");
        splade_index_builder *b = bounded_builder(dir, &docs, 96 << 10, policy);
        assert_int_equal(splade_builder_write(b, dir, NULL), 0);
        int merged = splade_builder_merged(b);
        splade_builder_free(b);
        int n = segments_of(dir);
        if (policy < 0) {
            assert_true(n > 4);
            assert_int_equal(merged, 0);
            assert_int_equal(generation_of(dir), 1);
        } else {
            assert_int_equal(n, 3);
            assert_true(merged >= 2);
            assert_int_equal(generation_of(dir), 2);
        }
        check_equal(dir, &docs, policy < 0 ? "bounded build, no policy" : "bounded build, policy 3");
        check_no_strays(dir);
        td_free(dir);
    }
    free(docs.d);
}

/* A --vectors merge keeps only the tokens that still have a live posting. */
static void test_merge_drops_dead_tokens(void **state)
{
    (void)state;
    char *dir = small_index(3);
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    uint32_t before = splade_index_get_info(ix)->n_terms;
    splade_index_close(ix);
    /* a document whose token no other document has: then deleted */
    vdoc v[2] = {{.id = "lonely", .n = 1, .tok = {VOCAB + 7}, .w = {1.5f}}, {.id = "other", .n = 1, .tok = {3}, .w = {1}}};
    splade_index_builder *b = builder_of(v, 2); /* two: a segment whose documents are all deleted is dropped at once */
    splade_add_opts o = {.no_merge = 1};
    assert_int_equal(splade_index_add(b, dir, &o, NULL), 0);
    splade_builder_free(b);
    assert_int_equal(splade_index_open(dir, &ix), 0);
    assert_int_equal(splade_index_get_info(ix)->n_terms, before + 1);
    splade_index_close(ix);
    const char *ids[] = {"lonely"};
    assert_int_equal(splade_index_delete(dir, ids, 1, 1, NULL), 0);
    int segs = segments_of(dir);
    assert_true(segs >= 2);
    splade_merge_stats st;
    assert_int_equal(splade_index_merge(dir, 0, 1, &st), 0);
    assert_int_equal(st.n_merged, segs);
    assert_int_equal(st.n_dropped, 1);
    assert_true(st.bytes_out > 0);
    assert_int_equal(segments_of(dir), 1);
    assert_int_equal(splade_index_open(dir, &ix), 0);
    assert_int_equal(splade_index_get_info(ix)->n_terms, before);
    assert_int_equal(splade_index_term_lookup(ix, "w307", 4), -1);
    splade_index_close(ix);
    td_free(dir);
}

/* A merge whose cancel flag is set stops before installing anything: same generation, no strays. */
static void test_merge_cancelled(void **state)
{
    (void)state;
    char *dir = small_index(3);
    uint64_t g = generation_of(dir);
    volatile int flag = 1;
    splade_merge_opts o;
    splade_merge_opts_init(&o);
    o.cancel = &flag;
    assert_int_equal(splade_index_merge_opts(dir, &o, NULL), SPLADE_ERR_CANCELLED);
    assert_non_null(strstr(splade_error_detail(), "cancelled"));
    assert_int_equal(generation_of(dir), g);
    assert_int_equal(segments_of(dir), 3);
    check_no_strays(dir);
    flag = 0;
    splade_merge_stats st;
    assert_int_equal(splade_index_merge_opts(dir, &o, &st), 0);
    assert_int_equal(st.n_merged, 3);
    assert_int_equal(segments_of(dir), 1);
    td_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_operations_match_single_build),
        cmocka_unit_test(test_add_to_missing_index),
        cmocka_unit_test(test_duplicate_id_refused_unless_update),
        cmocka_unit_test(test_delete_unknown_ids),
        cmocka_unit_test(test_vocabulary_kind_mismatch),
        cmocka_unit_test(test_damaged_manifest_and_files),
        cmocka_unit_test(test_two_writers),
        cmocka_unit_test(test_bounded_build_merge_policy),
        cmocka_unit_test(test_merge_drops_dead_tokens),
        cmocka_unit_test(test_merge_cancelled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
