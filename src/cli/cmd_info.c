/* splade-index info: what an index folder holds (segments, documents, deletions, postings, bytes,
 * model), from the generation a reader opens. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_env.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "splade.h"
#include "splade/index.h"
#include "splade/segments.h"

static const char usage_text[] =
    "usage: splade-index info [-i DIR]\n"
    "\n"
    "Prints the index in DIR (default: $SPLADE_INDEX, else ./" SPLADE_INDEX_DEFAULT_DIR "): generation, model,\n"
    "doc_scale, then one line per segment (file, documents, deleted, postings, bytes, postings clipped at\n"
    "impact 255, first sequence number) and the totals.\n";

int cmd_info(int argc, char **argv)
{
    static const struct option longs[] = {{"index", required_argument, 0, 'i'}, {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    const char *index = NULL;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "i:h", longs, NULL)) != -1;) {
        switch (c) {
        case 'i': index = optarg; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "splade-index info: unexpected argument '%s'\n%s", argv[optind], usage_text);
        return 2;
    }
    const char *dir = splade_cli_index_dir(index);
    splade_index *ix;
    int rc = splade_index_open(dir, &ix);
    if (rc < 0) {
        fprintf(stderr, "splade-index info: %s: %s\n", splade_strerror(rc), splade_error_detail());
        return 1;
    }
    const splade_index_info *in = splade_index_get_info(ix);
    int n = splade_index_segment_count(ix);
    printf("index: %s\ngeneration: %llu%s\n", dir, (unsigned long long)splade_index_generation(ix),
           splade_index_generation(ix) ? "" : " (a single index.spx, no MANIFEST)");
    if (in->flags & SPLADE_IX_HAS_MODEL)
        printf("model: %s (%s, fingerprint %016llx)\n", in->model_name, in->model_dir, (unsigned long long)in->fingerprint);
    if (in->flags & SPLADE_IX_QUERY_TABLE)
        printf("queries: inference-free (weighted by the model's query table, no forward pass)\n");
    else if (!(in->flags & SPLADE_IX_HAS_MODEL))
        printf("model: none (--vectors)\n");
    printf("doc_scale: %.9g\nterms: %u\n", (double)in->doc_scale, in->n_terms);
    printf("%-24s %10s %10s %12s %14s %10s %12s\n", "segment", "documents", "deleted", "postings", "bytes", "clipped",
           "first seq");
    uint64_t docs = 0, del = 0, post = 0, bytes = 0, clipped = 0;
    for (int i = 0; i < n; i++) {
        splade_segment_info s;
        splade_index_segment_info(ix, i, &s);
        printf("%-24s %10u %10u %12llu %14llu %10llu %12llu\n", s.file, s.n_docs, s.n_deleted,
               (unsigned long long)s.n_postings, (unsigned long long)s.bytes, (unsigned long long)s.clipped,
               (unsigned long long)s.seq_base);
        docs += s.n_docs, del += s.n_deleted, post += s.n_postings, bytes += s.bytes, clipped += s.clipped;
    }
    printf("%-24s %10llu %10llu %12llu %14llu %10llu\n", "total", (unsigned long long)docs, (unsigned long long)del,
           (unsigned long long)post, (unsigned long long)bytes, (unsigned long long)clipped);
    printf("live documents: %u in %d segment%s\n", in->n_docs, n, n == 1 ? "" : "s");
    splade_index_close(ix);
    return 0;
}
