/* The CLI's environment variables, all read here (src/cli/cli_env.c) and handed to the library as
 * options: the library reads none of them (docs/CONTRIBUTING.md, "Settings"). */
#ifndef SPLADE_CLI_ENV_H
#define SPLADE_CLI_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "splade/index.h"
#include "splade/model.h"

/* `arg` (-o / -i) if given, else $SPLADE_INDEX, else SPLADE_INDEX_DEFAULT_DIR. */
const char *splade_cli_index_dir(const char *arg);

/* fetch-model's store: $SPLADE_CACHE if set, else $HOME/.cache/splade-index. SPLADE_ERR_NOT_FOUND
 * when neither is set, SPLADE_ERR_INVALID_ARG when too long. */
int splade_cli_cache_dir(char *path, size_t n);

/* Where models are looked for: the cache above (none when it cannot be had) and $SPLADE_MODEL.
 * Static storage, valid until the next call. */
const splade_model_paths *splade_cli_model_paths(void);

/* $SPLADE_HF_ENDPOINT and $HF_TOKEN into o->endpoint and o->token. */
void splade_cli_fetch_env(splade_fetch_opts *o);

/* $SPLADE_MAX_BATCH_TOKENS (the encoder's memory cap), 0 when unset. */
int32_t splade_cli_max_batch_tokens(void);

/* $SOURCE_DATE_EPOCH, when set to a whole number, as the index's build time (reproducible builds). */
void splade_cli_build_time(splade_index_builder *b);

#endif
