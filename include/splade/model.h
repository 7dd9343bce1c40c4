/* A BERT-family masked-LM checkpoint in Hugging Face layout, held in host memory as fp32.
 * Owner: src/encoder/config.c, safetensors.c, model.c; the weights' layout is internal
 * (src/encoder/model_internal.h). */
#ifndef SPLADE_MODEL_H
#define SPLADE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "splade.h"
#include "splade/sparse.h"
#include "splade/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Architectures whose masked-LM checkpoints load (config.json "model_type" / "architectures"). */
typedef enum { SPLADE_ARCH_BERT = 0, SPLADE_ARCH_DISTILBERT = 1 } splade_arch;
/* SPLADE pooling over positions (sentence-transformers SpladePooling "pooling_strategy"). */
typedef enum { SPLADE_POOL_MAX = 0, SPLADE_POOL_SUM = 1 } splade_pooling;
/* The activation applied to each logit before pooling (SpladePooling "activation_function"):
 * "relu" there means log1p(relu(x)) (SPLADE's); "log1p_relu" means log1p(log1p(relu(x))). */
typedef enum { SPLADE_ACT_LOG1P_RELU = 0, SPLADE_ACT_LOG1P_LOG1P_RELU = 1 } splade_activation;

typedef struct {
    int32_t vocab_size;
    int32_t hidden_size;
    int32_t num_layers;
    int32_t num_heads;
    int32_t intermediate_size;
    int32_t max_position;
    int32_t type_vocab_size;
    int32_t pad_token_id;
    float layer_norm_eps;
    bool tie_word_embeddings;
    bool do_lower_case;     /* from tokenizer_config.json; true when absent */
    /* Appended (older bindings read the fields above only): */
    int32_t architecture;   /* splade_arch */
    int32_t pooling;        /* splade_pooling; SPLADE_POOL_MAX unless the model declares otherwise */
    int32_t activation;     /* splade_activation; SPLADE_ACT_LOG1P_RELU unless declared */
} splade_config;

/* A loaded model (opaque): its weights in host memory as fp32, its tokenizer and config. Read-only
 * once loaded: one model may serve any number of encoders on any threads at once. */
typedef struct splade_model splade_model;

/* Loads config.json, vocab.txt, tokenizer_config.json (optional) and
 * model.safetensors from `dir`. *out owned by the caller: splade_model_free.
 * Refused (SPLADE_ERR_MODEL, naming the file and tensor): a tensor missing or of the wrong
 * shape, a tensor the forward does not use (beyond the documented position_ids / pooler /
 * next-sentence ones), a NaN or Inf weight. Each file must be a regular file; vocab.txt at most
 * 64 MiB, the JSON files at most 1 MiB. */
SPLADE_API int splade_model_load(const char *dir, splade_model **out);
SPLADE_API void splade_model_free(splade_model *m);

/* Accessors; pointers stay valid until splade_model_free(m). */
SPLADE_API const splade_config *splade_model_config(const splade_model *m);
SPLADE_API const splade_tokenizer *splade_model_tokenizer(const splade_model *m);
/* Identifies weights + vocabulary + tokenizer settings + the config.json values that change the
 * output (docs/FORMAT.md, "Model fingerprint"); indexes record it to refuse another model. */
SPLADE_API uint64_t splade_model_fingerprint(const splade_model *m);
/* The folder the model was loaded from, as given to splade_model_load. */
SPLADE_API const char *splade_model_dir(const splade_model *m);

/* Parses and validates config.json (BERT or DistilBERT masked LM, exact GELU) into *cfg; an unknown
 * "model_type" / "architectures" is SPLADE_ERR_UNSUPPORTED naming it and the supported list;
 * do_lower_case is set to true (tokenizer_config.json is read by splade_model_load). */
SPLADE_API int splade_config_load(const char *config_path, splade_config *cfg);

/* Inference-free ("doc-only") models: the model folder holds a query table (idf.json, OpenSearch's
 * layout, or a sentence-transformers Router whose query route is a SparseStaticEmbedding module).
 * Documents are encoded by the forward pass; a query's vector is its distinct tokens weighted by
 * the table. 1 when the model has one. */
SPLADE_API int splade_model_has_query_table(const splade_model *m);
/* FNV-1a of the table's fp32 weights (0 without one); also part of splade_model_fingerprint. */
SPLADE_API uint64_t splade_model_query_table_fingerprint(const splade_model *m);
/* The query vector of `len` bytes of text: its distinct WordPiece tokens among the first max_len
 * (no [CLS]/[SEP], as sentence-transformers' SparseStaticEmbedding tokenizes), each weighted by the
 * table, zero weights dropped, term ids ascending. *out owned by the caller (splade_sparse_free).
 * SPLADE_ERR_UNSUPPORTED when the model has no query table. */
SPLADE_API int splade_model_query_vector(const splade_model *m, const char *text, size_t len, int32_t max_len,
                                         splade_sparse *out);

/* Index of the first NaN or Inf among x[0 .. n), n when all are finite. */
SPLADE_API size_t splade_first_nonfinite(const float *x, size_t n);

/* Name of the model used when no name is given and paths->default_model is unset. */
#define SPLADE_DEFAULT_MODEL "splade-tiny"

/* Where models are looked for. The library reads no environment: the CLI fills this from
 * $SPLADE_MODEL, $SPLADE_CACHE and $HOME (src/cli/cli_env.c). A zeroed struct (or NULL) means no
 * cache and no default beyond ./cache/splade-tiny. */
typedef struct {
    const char *cache_dir;       /* fetch-model's store (ORG/NAME under it); NULL or "": none. The
                                    CLI: $SPLADE_CACHE, else $HOME/.cache/splade-index */
    const char *default_model;   /* name or folder used when none is given; NULL or "": see below.
                                    The CLI: $SPLADE_MODEL */
    const char *default_origin;  /* how messages name where default_model came from ("$SPLADE_MODEL");
                                    NULL: "the default" */
} splade_model_paths;

/* Resolves the model folder to load, in this order:
 *   1. `arg` (e.g. --model) when non-NULL and non-empty: a folder holding config.json, else
 *      CACHE/ARG (so `--model ORG/NAME` finds what fetch-model stored);
 *   2. paths->default_model (same rules);
 *   3. CACHE/splade-tiny, then ./cache/splade-tiny (what `make models` writes).
 * Writes the folder to path[n]. SPLADE_ERR_NOT_FOUND names what was tried and the
 * command that fetches a model. paths may be NULL. */
SPLADE_API int splade_model_resolve(const char *arg, const splade_model_paths *paths, char *path, size_t n);

typedef struct {
    const char *dest;        /* folder to write; NULL: cache_dir/ORG/NAME */
    const char *cache_dir;   /* used when dest is NULL (then required) */
    const char *endpoint;    /* hub base URL; NULL or "": https://huggingface.co (the CLI:
                                $SPLADE_HF_ENDPOINT) */
    const char *token;       /* sent as a bearer token; NULL or "": none (the CLI: $HF_TOKEN) */
    /* Stage = the file's name ("model.safetensors"), one call when a file has been downloaded, with
     * done == total == its size in bytes (files complete from an earlier run: no call). NULL: none. */
    splade_progress_fn progress;
    void *progress_user;
} splade_fetch_opts;

/* Fills *o with the defaults (no folder, the public hub, no token, no progress callback). */
SPLADE_API void splade_fetch_opts_init(splade_fetch_opts *o);

/* Downloads a Hugging Face model repository ORG/NAME: a plain folder (config.json, vocab.txt,
 * model.safetensors; tokenizer_config.json and idf.json when present), or, when the repository has
 * modules.json, the files its sentence-transformers modules need (each module's folder; a Router's
 * router_config.json and every module of its routes; config_sentence_transformers.json, idf.json
 * when present) from ENDPOINT/ORG/NAME/resolve/main/FILE into opts->dest
 * (else opts->cache_dir/ORG/NAME). Resumable: a file arrives as FILE.part, continued with a Range
 * request, renamed when complete; complete files are kept. Logs "fetching ORG/NAME from URL into
 * DIR" (SPLADE_LOG_INFO) before the first file. The folder written goes to dir[n].
 * Errors: SPLADE_ERR_NETWORK (unreachable / transfer failed), SPLADE_ERR_NOT_FOUND (HTTP 404 for a
 * required file), SPLADE_ERR_IO, SPLADE_ERR_INVALID_ARG (repo not ORG/NAME, no folder given). */
SPLADE_API int splade_model_fetch(const char *repo, const splade_fetch_opts *opts, char *dir, size_t n);

#ifdef __cplusplus
}
#endif
#endif
