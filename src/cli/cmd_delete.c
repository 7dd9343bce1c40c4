/* splade-index delete: mark documents deleted by id (include/splade/segments.h, splade_index_delete). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_env.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "splade.h"
#include "splade/segments.h"

static const char usage_text[] =
    "usage: splade-index delete -i DIR ID... [--strict] [--quiet]\n"
    "       splade-index delete -i DIR --ids FILE [--strict] [--quiet]\n"
    "\n"
    "Deletes the documents with these ids (FILE: one id per line; \"-\" is standard input) from the index\n"
    "in DIR (default: $SPLADE_INDEX, else ./" SPLADE_INDEX_DEFAULT_DIR "). Ids that are not in the index are\n"
    "reported (their count and the first few); with --strict they are an error and nothing is deleted.\n"
    "The documents leave every search at once; their space is reclaimed by `merge`.\n";

typedef struct {
    char **v;
    size_t n, cap;
} id_list;

static int push(id_list *l, const char *s, size_t len)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strndup(s, len)))
        return -1;
    l->n++;
    return 0;
}

/* One id per line; trailing \r and blank lines ignored. */
static int read_ids(const char *path, id_list *l)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "splade-index delete: %s: cannot open: ", path);
        perror(NULL);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    for (ssize_t n; rc == 0 && (n = getline(&line, &cap, f)) >= 0;) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        if (n > 0 && push(l, line, (size_t)n) < 0)
            rc = 1;
    }
    if (ferror(f)) {
        fprintf(stderr, "splade-index delete: %s: read error\n", path);
        rc = 1;
    }
    free(line);
    if (f != stdin)
        fclose(f);
    return rc;
}

int cmd_delete(int argc, char **argv)
{
    static const struct option longs[] = {{"index", required_argument, 0, 'i'}, {"ids", required_argument, 0, 'I'},
                                          {"strict", no_argument, 0, 's'},       {"quiet", no_argument, 0, 'q'},
                                          {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    const char *index = NULL, *file = NULL;
    int strict = 0, quiet = 0;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "i:qh", longs, NULL)) != -1;) {
        switch (c) {
        case 'i': index = optarg; break;
        case 'I': file = optarg; break;
        case 's': strict = 1; break;
        case 'q': quiet = 1; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
    }
    if ((optind < argc) == !!file) {
        fprintf(stderr, "splade-index delete: give the ids as arguments or --ids FILE (one of the two)\n%s", usage_text);
        return 2;
    }
    id_list ids = {0};
    int rc = 0;
    for (int i = optind; rc == 0 && i < argc; i++)
        rc = push(&ids, argv[i], strlen(argv[i])) < 0;
    if (rc == 0 && file)
        rc = read_ids(file, &ids);
    splade_delete_stats st;
    const char *dir = splade_cli_index_dir(index);
    if (rc == 0) {
        int lrc = splade_index_delete(dir, (const char *const *)ids.v, ids.n, strict, &st);
        if (lrc < 0)
            fprintf(stderr, "splade-index delete: %s: %s\n", splade_strerror(lrc), splade_error_detail());
        rc = lrc < 0;
    }
    for (size_t i = 0; i < ids.n; i++)
        free(ids.v[i]);
    free(ids.v);
    if (rc)
        return 1;
    if (st.n_unknown) /* reported, not fatal: the ids are not in the index either way */
        fprintf(stderr, "splade-index delete: %u ids not in the index: %s%s\n", st.n_unknown, st.unknown,
                st.n_unknown > 5 ? ", ..." : "");
    if (!quiet)
        printf("deleted %u documents from %s (generation %llu)\n", st.n_deleted, dir, (unsigned long long)st.generation);
    return 0;
}
