/* splade-index merge: merge the segments of an index (include/splade/segments.h, splade_index_merge). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_env.h"
#include "cli/cli_output.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "splade.h"
#include "splade/segments.h"

static const char usage_text[] =
    "usage: splade-index merge [-i DIR] [--max-segments N] [--threads N] [--quiet]\n"
    "\n"
    "Merges the segments of the index in DIR (default: $SPLADE_INDEX, else ./" SPLADE_INDEX_DEFAULT_DIR ") into\n"
    "one, dropping deleted documents; with --max-segments N only the smallest, until N remain. Searches\n"
    "answer exactly as before (same documents, scores and tie order); readers are never blocked.\n";

int cmd_merge(int argc, char **argv)
{
    static const struct option longs[] = {{"index", required_argument, 0, 'i'},
                                          {"max-segments", required_argument, 0, 'S'},
                                          {"threads", required_argument, 0, 't'},
                                          {"quiet", no_argument, 0, 'q'},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    const char *index = NULL;
    int max_segments = 0, threads = 0, quiet = 0;
    optind = 1;
    for (int c, bad = 0; (c = getopt_long(argc, argv, "i:qh", longs, NULL)) != -1;) {
        switch (c) {
        case 'i': index = optarg; break;
        case 'S': bad = splade_cli_int("merge", "--max-segments", optarg, 1, 1 << 20, &max_segments); break;
        case 't': bad = splade_cli_int("merge", "--threads", optarg, 1, SPLADE_CLI_MAX_THREADS, &threads); break;
        case 'q': quiet = 1; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
        if (bad)
            return bad;
    }
    if (optind < argc) {
        fprintf(stderr, "splade-index merge: unexpected argument '%s'\n%s", argv[optind], usage_text);
        return 2;
    }
    const char *dir = splade_cli_index_dir(index);
    double t0 = splade_cli_now();
    splade_merge_stats st;
    int rc = splade_index_merge(dir, max_segments, threads, &st);
    if (rc < 0) {
        fprintf(stderr, "splade-index merge: %s: %s\n", splade_strerror(rc), splade_error_detail());
        return 1;
    }
    double secs = splade_cli_now() - t0;
    if (!quiet && st.n_merged == 0)
        printf("nothing to merge in %s\n", dir);
    else if (!quiet)
        printf("merged %d segments into %s/%s: %u documents, %u deleted dropped, %.1f MB in, %.2f s (%.1f MB/s); "
               "generation %llu\n", st.n_merged, dir, st.segment, st.n_docs, st.n_dropped, st.bytes_in / 1e6, secs,
               secs > 0 ? st.bytes_in / 1e6 / secs : 0.0, (unsigned long long)st.generation);
    return 0;
}
