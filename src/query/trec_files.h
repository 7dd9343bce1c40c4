/* Parsed qrels / run files (trec_files.c), consumed by eval.c. */
#ifndef SPLADE_QUERY_TREC_FILES_H
#define SPLADE_QUERY_TREC_FILES_H

#include <stddef.h>

typedef struct {
    const char *qid, *doc;
    double score;   /* run score, or relevance for qrels */
    long line;
} trec_entry;

struct splade_trec_file {
    char *buf;            /* the whole file; entries point into it */
    trec_entry *e;
    size_t n;
    /* sorted by qid, then (qrels) docno ascending or (run) trec_eval's rank order */
};

#endif
