/* Streaming reader for corpus / query JSONL files.
 *
 * Accepted records (one JSON object per line, blank lines skipped):
 *   BEIR:      {"_id": ..., "title": ..., "text": ...}   (title optional)
 *   Anserini:  {"id": ..., "contents": ...} or {"id": ..., "text": ...}
 * Ids may be JSON strings or integers (integers are kept in decimal form); a string id must follow
 * the id rule below (splade_id_problem). Input: a plain file, or a gzip file (recognised by its magic
 * bytes, whatever its name), read as a stream; bzip2/xz/zstd/lz4/zip is SPLADE_ERR_UNSUPPORTED naming
 * the format. A UTF-8 byte-order mark at the start is skipped; lines may be up to 64 MiB.
 * The text to encode is `title + " " + text` when the title is non-empty,
 * else `text` alone: the same join tools/ uses for the reference pipeline. */
#ifndef SPLADE_CORPUS_H
#define SPLADE_CORPUS_H

#include "splade.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Thread safety: a reader is used by one thread at a time; readers of the same file are independent. */
typedef struct splade_corpus_reader splade_corpus_reader;

typedef struct {
    const char *id;     /* NUL-terminated */
    const char *title;  /* "" when absent */
    const char *body;   /* the "text"/"contents" field */
    const char *text;   /* the text to encode (title joined with body) */
    size_t text_len;
    long line;          /* 1-based line number in the file */
} splade_doc;

/* Opens path ("-" is standard input). *out is owned by the caller: close it
 * with splade_corpus_close. */
SPLADE_API int splade_corpus_open(const char *path, splade_corpus_reader **out);

/* Reads the next record. Returns 1 with *doc filled (its strings stay valid
 * until the next call or close), 0 at end of file, or a negative status; on
 * SPLADE_ERR_FORMAT the detail reads "PATH:LINE: reason" and the reader is
 * positioned after the bad line, so a caller may count it and continue. */
SPLADE_API int splade_corpus_next(splade_corpus_reader *r, splade_doc *doc);

/* Reads records from `len` bytes at `data` (not copied: must outlive the reader);
 * `name` stands for the path in error details. */
SPLADE_API int splade_corpus_open_memory(const void *data, size_t len, const char *name,
                                         splade_corpus_reader **out);

/* Line-length limit in bytes (0: the default, 64 MiB); tests lower it. */
SPLADE_API void splade_corpus_set_max_line(splade_corpus_reader *r, size_t max_line);

SPLADE_API void splade_corpus_close(splade_corpus_reader *r);

/* Longest accepted id, in bytes. */
#define SPLADE_ID_MAX 1024

/* The id rule for documents and queries (ids end up as TREC run columns): non-empty, at most
 * SPLADE_ID_MAX bytes, valid UTF-8, no ASCII whitespace or control character (0x00-0x20, 0x7f).
 * NULL when `id` (len bytes) follows it, else a static phrase saying why ("is empty", ...). */
SPLADE_API const char *splade_id_problem(const char *id, size_t len);

#ifdef __cplusplus
}
#endif
#endif
