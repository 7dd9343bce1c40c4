/* splade-index eval: score a TREC run against qrels with trec_eval's definitions. */
#include <getopt.h>
#include <stdio.h>

#include "cli/commands.h"
#include "common/fail.h"
#include "splade.h"
#include "splade/eval.h"

static const char usage_text[] =
    "usage: splade-index eval --run RUN.trec --qrels QRELS [--metrics ndcg@10,mrr@10,recall@100]\n"
    "                         [--per-query] [--json]\n"
    "\n"
    "QRELS: BEIR TSV (query-id corpus-id score, header optional) or TREC (qid iter docno rel).\n"
    "Definitions follow trec_eval: run ranked by score then docno descending, relevant = rel >= 1,\n"
    "linear-gain nDCG, queries without a relevant document are not evaluated.\n";

static void print_text(const splade_eval_result *r, const splade_metric *m, int per_query)
{
    for (int q = 0; per_query && q < r->n_queries; q++)
        for (int i = 0; i < r->n_metrics; i++)
            printf("%-12s %-10s %.6f\n", m[i].name, r->qids[q], r->per_query[(size_t)q * r->n_metrics + i]);
    for (int i = 0; i < r->n_metrics; i++)
        printf("%-12s %-10s %.6f\n", m[i].name, "all", r->mean[i]);
    printf("%-12s %-10s %d\n", "queries", "all", r->n_queries);
}

static void print_json(const splade_eval_result *r, const splade_metric *m)
{
    printf("{\"queries\": %d", r->n_queries);
    for (int i = 0; i < r->n_metrics; i++)
        printf(", \"%s\": %.6f", m[i].name, r->mean[i]);
    printf("}\n");
}

int cmd_eval(int argc, char **argv)
{
    static const struct option longs[] = {{"run", required_argument, 0, 'r'}, {"qrels", required_argument, 0, 'q'},
                                          {"metrics", required_argument, 0, 'm'}, {"per-query", no_argument, 0, 'p'},
                                          {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    const char *run_path = NULL, *qrels_path = NULL, *spec = "ndcg@10,mrr@10,recall@100";
    int per_query = 0, json = 0;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "h", longs, NULL)) != -1;) {
        switch (c) {
        case 'r': run_path = optarg; break;
        case 'q': qrels_path = optarg; break;
        case 'm': spec = optarg; break;
        case 'p': per_query = 1; break;
        case 'j': json = 1; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
    }
    if (!run_path || !qrels_path || optind < argc) {
        fputs(usage_text, stderr);
        return 2;
    }
    splade_metric m[16];
    int nm;
    splade_trec_file *qrels = NULL, *run = NULL;
    splade_eval_result r = {0};
    int rc = splade_metrics_parse(spec, m, 16, &nm);
    if (rc == 0)
        rc = splade_qrels_load(qrels_path, &qrels);
    if (rc == 0)
        rc = splade_run_load(run_path, &run);
    if (rc == 0)
        rc = splade_evaluate(qrels, run, m, nm, &r);
    if (rc == 0 && r.n_queries == 0)
        rc = splade_fail(SPLADE_ERR_NOT_FOUND, "no query of %s has a relevant document in %s", run_path, qrels_path);
    if (rc == 0)
        json ? print_json(&r, m) : print_text(&r, m, per_query);
    else
        fprintf(stderr, "splade-index eval: %s: %s\n", splade_strerror(rc), splade_error_detail());
    splade_eval_result_free(&r);
    splade_trec_file_free(qrels);
    splade_trec_file_free(run);
    return rc == 0 ? 0 : (rc == SPLADE_ERR_INVALID_ARG ? 2 : 1);
}
