/* JSON Lines, one object a line: the part every JSONL reader shares (corpus.h, vectors.h).
 * Blank lines are skipped; a NUL byte, invalid JSON, duplicate keys or a non-object line is
 * SPLADE_ERR_FORMAT with the detail "PATH:LINE: reason", after which the reader is past that line. */
#ifndef SPLADE_JSONL_H
#define SPLADE_JSONL_H

#include "splade.h"

#include <jansson.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct splade_jsonl splade_jsonl;

/* path "-" is standard input. *out owned by the caller: splade_jsonl_close. */
SPLADE_API int splade_jsonl_open(const char *path, splade_jsonl **out);
/* Reads `len` bytes at `data` (not copied: must outlive the reader); `name` stands for the path. */
SPLADE_API int splade_jsonl_open_memory(const void *data, size_t len, const char *name, splade_jsonl **out);

/* 1 with *obj (owned by the reader, valid until the next call or close), 0 at end of input,
 * or a negative status. */
SPLADE_API int splade_jsonl_next(splade_jsonl *j, json_t **obj);

SPLADE_API const char *splade_jsonl_path(const splade_jsonl *j);
SPLADE_API long splade_jsonl_line(const splade_jsonl *j);  /* 1-based line of the last record read */
SPLADE_API void splade_jsonl_close(splade_jsonl *j);

/* The record id: `first`, else `second` field ("_id"/"id"), a JSON string as is or an integer in
 * decimal (written to buf, which must hold 32 bytes). NULL when absent or of another type. */
SPLADE_API const char *splade_json_id(json_t *obj, const char *first, const char *second, char buf[32]);

#ifdef __cplusplus
}
#endif
#endif
