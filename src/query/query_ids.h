/* Query ids seen so far in one queries file (query_input.c): a repeated id is an error naming both
 * lines, since a run with two queries of one id fails `eval` later, far from its cause. */
#ifndef SPLADE_QUERY_IDS_H
#define SPLADE_QUERY_IDS_H

#include "index/strtab.h"

typedef struct {
    strtab ids;
    long *lines; /* input line of each id */
    uint32_t cap;
} query_ids;

int query_ids_init(query_ids *s);
/* Records id from path:line; SPLADE_ERR_DUPLICATE if an earlier line had the same id. */
int query_ids_add(query_ids *s, const char *path, const char *id, long line);
void query_ids_free(query_ids *s);

#endif
