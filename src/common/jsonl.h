/* JSON Lines, one object a line: the part every JSONL reader shares (include/splade/corpus.h,
 * vectors.h). Internal (not installed): its records are jansson's json_t.
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
#ifndef SPLADE_COMMON_JSONL_H
#define SPLADE_COMMON_JSONL_H


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
int splade_jsonl_open(const char *path, splade_jsonl **out);
/* Reads `len` bytes at `data` (not copied: must outlive the reader); `name` stands for the path. */
int splade_jsonl_open_memory(const void *data, size_t len, const char *name, splade_jsonl **out);
/* Lowers (or raises) the line-length limit; 0 restores SPLADE_JSONL_MAX_LINE. */
void splade_jsonl_set_max_line(splade_jsonl *j, size_t max_line);

/* 1 with *obj (owned by the reader, valid until the next call or close), 0 at end of input,
 * or a negative status. */
int splade_jsonl_next(splade_jsonl *j, json_t **obj);

/* The next non-blank line's bytes (a byte-order mark at the start dropped, no newline; valid until
 * the next call or close): 1, 0 at end of input, or a negative status as for splade_jsonl_next.
 * With splade_jsonl_parse, what splade_jsonl_next does, split so that a caller can parse lines
 * on other threads (src/common/corpus_batch.c). */
int splade_jsonl_next_line(splade_jsonl *j, const char **text, size_t *n);

/* Parses one line read as line number `line` of `path` (both only for error details): 1 with *obj,
 * a new reference the caller must json_decref, or SPLADE_ERR_FORMAT as splade_jsonl_next reports
 * it. Thread-safe: it touches no reader. */
int splade_jsonl_parse(const char *path, long line, const char *text, size_t n, json_t **obj);

const char *splade_jsonl_path(const splade_jsonl *j);
long splade_jsonl_line(const splade_jsonl *j);  /* 1-based line of the last record read */
void splade_jsonl_close(splade_jsonl *j);

/* The record id of the line just read: field `first`, else `second` ("_id"/"id"), a JSON string
 * as is or an integer in decimal (written to buf, which must hold 32 bytes). *id points into the
 * record or buf. SPLADE_ERR_FORMAT "PATH:LINE: ..." naming the field when it is absent, of another
 * type, or breaks the id rule (splade_id_problem). */
int splade_jsonl_id(const splade_jsonl *j, json_t *obj, const char *first, const char *second, char buf[32],
                    const char **id);
/* The same for a record parsed apart from its reader (splade_jsonl_parse). */
int splade_jsonl_id_at(const char *path, long line, json_t *obj, const char *first, const char *second, char buf[32],
                       const char **id);

#ifdef __cplusplus
}
#endif
#endif
