/* Which files of a model folder make the model: a plain Hugging Face folder (config.json,
 * vocab.txt, model.safetensors, optional idf.json) or a sentence-transformers SparseEncoder folder
 * (modules.json: an MLM transformer, a SpladePooling module with its pooling and activation, or a
 * Router whose query route is a SparseStaticEmbedding table). Private to src/encoder/. */
#ifndef SPLADE_MODEL_LAYOUT_H
#define SPLADE_MODEL_LAYOUT_H

#include <stdint.h>

enum { SPLADE_QTABLE_NONE = 0, SPLADE_QTABLE_IDF_JSON = 1, SPLADE_QTABLE_STATIC = 2 };

typedef struct {
    char model_dir[4096];     /* the MLM transformer's folder (config.json, vocab.txt, model.safetensors) */
    int32_t pooling, activation; /* splade_pooling / splade_activation; defaults without SpladePooling */
    int64_t pool_dim;         /* SpladePooling "embedding_dimension"; -1 when null or absent */
    char pooling_path[4096];  /* the SpladePooling config.json ("" when none) */
    int qtable;               /* SPLADE_QTABLE_*: the inference-free query table, if any */
    char qtable_path[4096];   /* idf.json, or the query module's model.safetensors */
    char qtable_dir[4096];    /* the query module's folder (its vocab.txt must be the model's) */
} splade_model_layout;

/* Reads modules.json (and router_config.json, the SpladePooling config) when `dir` has one; else
 * the plain layout. Errors name the file and field: an unknown module type, a Router without a
 * document route, a pooling strategy or activation sentence-transformers does not define. */
int splade_model_layout_read(const char *dir, splade_model_layout *L);

#endif
