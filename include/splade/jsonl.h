/* JSON Lines, one object a line: the part every JSONL reader shares (corpus.h, vectors.h).
 *
 * Input: a plain file, or a gzip file (recognised by its magic bytes, whatever its name), read
 * as a stream; a bzip2/xz/zstd/lz4/zip file is SPLADE_ERR_UNSUPPORTED ("compressed input (xz) is
 * not supported"). A UTF-8 byte-order mark at the very start is skipped. Blank lines are skipped.
 *
 * Per-line errors are SPLADE_ERR_FORMAT with the detail "PATH:LINE: reason", after which the
 * reader is past that line (a caller may count it and go on): a NUL byte, a line longer than the
 * limit (checked while reading: the line is never held whole), invalid JSON, duplicate keys, a
 * \u0000 escape in a string (named by its field), or a line that is not an object.
 * Stream errors (read error, corrupt or truncated gzip data, out of memory) are another negative
 * status naming "PATH:LINE"; they are never taken for the end of the input, and every later call
 * fails too. */
#ifndef SPLADE_JSONL_H
#define SPLADE_JSONL_H

#include "splade.h"

#include <jansson.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest accepted line, in bytes without its newline: 64 MiB (a document this long is already
 * far beyond any encoder's max length; the cap bounds the memory one line can take). */
#define SPLADE_JSONL_MAX_LINE ((size_t)64 << 20)

typedef struct splade_jsonl splade_jsonl;

/* path "-" is standard input. *out owned by the caller: splade_jsonl_close. */
SPLADE_API int splade_jsonl_open(const char *path, splade_jsonl **out);
/* Reads `len` bytes at `data` (not copied: must outlive the reader); `name` stands for the path. */
SPLADE_API int splade_jsonl_open_memory(const void *data, size_t len, const char *name, splade_jsonl **out);
/* Lowers (or raises) the line-length limit; 0 restores SPLADE_JSONL_MAX_LINE. */
SPLADE_API void splade_jsonl_set_max_line(splade_jsonl *j, size_t max_line);

/* 1 with *obj (owned by the reader, valid until the next call or close), 0 at end of input,
 * or a negative status. */
SPLADE_API int splade_jsonl_next(splade_jsonl *j, json_t **obj);

SPLADE_API const char *splade_jsonl_path(const splade_jsonl *j);
SPLADE_API long splade_jsonl_line(const splade_jsonl *j);  /* 1-based line of the last record read */
SPLADE_API void splade_jsonl_close(splade_jsonl *j);

/* Longest accepted id, in bytes. */
#define SPLADE_ID_MAX 1024

/* The id rule for documents and queries (ids end up as TREC run columns): non-empty, at most
 * SPLADE_ID_MAX bytes, valid UTF-8, no ASCII whitespace or control character (0x00-0x20, 0x7f).
 * NULL when `id` (len bytes) follows it, else a static phrase saying why ("is empty", ...). */
SPLADE_API const char *splade_id_problem(const char *id, size_t len);

/* The record id of the line just read: field `first`, else `second` ("_id"/"id"), a JSON string
 * as is or an integer in decimal (written to buf, which must hold 32 bytes). *id points into the
 * record or buf. SPLADE_ERR_FORMAT "PATH:LINE: ..." naming the field when it is absent, of another
 * type, or breaks the id rule (splade_id_problem). */
SPLADE_API int splade_jsonl_id(const splade_jsonl *j, json_t *obj, const char *first, const char *second, char buf[32],
                               const char **id);

#ifdef __cplusplus
}
#endif
#endif
