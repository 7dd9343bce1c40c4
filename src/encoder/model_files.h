/* Opening a model folder's files safely: regular files only (a FIFO or /dev/urandom named
 * model.safetensors or vocab.txt would block or never end), with a size cap per kind of file.
 * Private to src/encoder/. */
#ifndef SPLADE_MODEL_FILES_H
#define SPLADE_MODEL_FILES_H

#include <jansson.h>
#include <stddef.h>

/* Size caps (README, "Model"): real files are far smaller (bert-base: vocab.txt 226 KiB,
 * config.json < 1 KiB); anything bigger is the wrong file. */
#define SPLADE_MAX_VOCAB_BYTES ((size_t)64 << 20)
#define SPLADE_MAX_JSON_BYTES ((size_t)1 << 20)

/* Opens `path` read-only without blocking on a FIFO, and accepts it only if it is a regular
 * file of at most max_bytes. *fd and *size on success (the caller closes *fd). Errors name the
 * file: SPLADE_ERR_NOT_FOUND (absent), SPLADE_ERR_IO, SPLADE_ERR_FORMAT (not a regular file,
 * too big). */
int splade_open_regular(const char *path, size_t max_bytes, int *fd, size_t *size);

/* Reads a whole regular file of at most max_bytes into *data (NUL-terminated, free()). */
int splade_read_regular(const char *path, size_t max_bytes, char **data, size_t *size);

/* Reads a JSON file of any shape (a regular file of at most max_bytes); duplicate keys are refused
 * (jansson would silently keep the last). *out: json_decref. SPLADE_ERR_FORMAT names FILE:LINE. */
int splade_json_load(const char *path, size_t max_bytes, json_t **out);

/* Reads a small JSON object file (config.json, tokenizer_config.json): a regular file of at
 * most SPLADE_MAX_JSON_BYTES; duplicate keys are refused (jansson would silently keep the
 * last). *out: json_decref. SPLADE_ERR_FORMAT names FILE:LINE for malformed JSON. */
int splade_json_load_object(const char *path, json_t **out);

#endif
