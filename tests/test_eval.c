/* splade-index eval against pytrec_eval / ir-measures goldens (tests/data/eval, written by
 * tools/make_eval_goldens.py): every metric, mean and per query, to 1e-6, for both qrels formats;
 * plus the error messages of malformed runs and qrels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "splade.h"
#include "splade/eval.h"

#define DATA "tests/data/eval/"
static const char *METRICS = "ndcg@10,ndcg@3,recall@100,recall@5,p@5,map,mrr@10";

static double lookup_result(const splade_eval_result *r, const splade_metric *m, int nm, const char *metric,
                            const char *qid, int *found)
{
    int mi = 0;
    while (mi < nm && strcmp(m[mi].name, metric))
        mi++;
    *found = mi < nm;
    if (!*found)
        return 0;
    if (!strcmp(qid, "all"))
        return r->mean[mi];
    for (int q = 0; q < r->n_queries; q++)
        if (!strcmp(r->qids[q], qid))
            return r->per_query[(size_t)q * (size_t)nm + (size_t)mi];
    *found = 0;
    return 0;
}

/* Compares every golden line of `name` with the evaluation of its run and the given qrels file. */
static int check_case(const char *name, const char *qrels_suffix)
{
    char path[256];
    splade_trec_file *qrels, *run;
    snprintf(path, sizeof path, DATA "%s%s", name, qrels_suffix);
    assert_int_equal(splade_qrels_load(path, &qrels), 0);
    snprintf(path, sizeof path, DATA "%s.trec", name);
    assert_int_equal(splade_run_load(path, &run), 0);
    splade_metric m[16];
    int nm;
    assert_int_equal(splade_metrics_parse(METRICS, m, 16, &nm), 0);
    splade_eval_result r;
    assert_int_equal(splade_evaluate(qrels, run, m, nm, &r), 0);
    FILE *g = fopen(DATA "golden.tsv", "r");
    assert_non_null(g);
    char cname[64], metric[64], qid[64];
    double want;
    int checked = 0;
    while (fscanf(g, "%63s %63s %63s %lf", cname, metric, qid, &want) == 4) {
        if (strcmp(cname, name))
            continue;
        if (!strcmp(metric, "queries")) {
            assert_int_equal(r.n_queries, (int)want);
            continue;
        }
        int found;
        double got = lookup_result(&r, m, nm, metric, qid, &found);
        if (!found || got < want - 1e-6 || got > want + 1e-6)
            fail_msg("%s %s %s: got %.9f (found %d), golden %.9f", name, metric, qid, got, found, want);
        checked++;
    }
    fclose(g);
    splade_eval_result_free(&r);
    splade_trec_file_free(qrels);
    splade_trec_file_free(run);
    return checked;
}

static void test_goldens(void **state)
{
    (void)state;
    static const char *cases[] = {"random1", "random2", "edge"};
    for (int i = 0; i < 3; i++) {
        int a = check_case(cases[i], ".qrels.tsv"), b = check_case(cases[i], ".qrels.trec");
        assert_true(a > 10);
        assert_int_equal(a, b);
    }
}

static char *write_temp(const char *content)
{
    char *path = strdup("/tmp/splade_test_evalXXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    close(fd);
    return path;
}

static void expect_run_error(const char *content, const char *needle)
{
    char *p = write_temp(content);
    splade_trec_file *f = (splade_trec_file *)1;
    assert_int_equal(splade_run_load(p, &f), SPLADE_ERR_FORMAT);
    assert_null(f);
    if (!strstr(splade_error_detail(), needle))
        fail_msg("\"%s\" lacks \"%s\"", splade_error_detail(), needle);
    unlink(p);
    free(p);
}

static void test_malformed_inputs(void **state)
{
    (void)state;
    expect_run_error("q1 Q0 d1 1 2.0 t\n\nq1 Q0 d2 2 1.0\n", ":3: expected 6 columns");
    expect_run_error("q1 Q0 d1 1 x t\n", ":1: score \"x\" is not a number");
    expect_run_error("q1 Q0 d1 1 2 t\nq2 Q0 d1 1 2 t\nq1 Q0 d1 2 1 t\n",
                     ":3: document \"d1\" repeated for query \"q1\" (first on line 1)");
    char *p = write_temp("q1\td1\t1\nq1\td2\n");
    splade_trec_file *f;
    assert_int_equal(splade_qrels_load(p, &f), SPLADE_ERR_FORMAT);
    assert_non_null(strstr(splade_error_detail(), ":2: expected 3 columns"));
    unlink(p);
    free(p);
    splade_metric m[4];
    int n;
    assert_int_equal(splade_metrics_parse("ndcg@10,bleu@4", m, 4, &n), SPLADE_ERR_INVALID_ARG);
    assert_non_null(strstr(splade_error_detail(), "bleu"));
    assert_int_equal(splade_metrics_parse("ndcg_cut_10,map,P@5", m, 4, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(m[0].name, "ndcg@10");
    assert_string_equal(m[2].name, "p@5");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_goldens),
        cmocka_unit_test(test_malformed_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
