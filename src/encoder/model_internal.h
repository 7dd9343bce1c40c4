/* The loaded model's layout (internal, not installed: include/splade/model.h declares it opaque).
 * What the CPU forward, the GPU upload and the tests that build random models read directly.
 * Linear weights keep PyTorch's nn.Linear layout: [out_features, in_features], row-major. */
#ifndef SPLADE_ENCODER_MODEL_INTERNAL_H
#define SPLADE_ENCODER_MODEL_INTERNAL_H

#include <stdint.h>

#include "splade/model.h"
#include "splade/tokenizer.h"

typedef struct {
    float *q_w, *q_b, *k_w, *k_b, *v_w, *v_b;  /* [H,H], [H] */
    float *attn_out_w, *attn_out_b;            /* [H,H], [H] */
    float *ln1_g, *ln1_b;                      /* attention LayerNorm */
    float *ffn_in_w, *ffn_in_b;                /* [I,H], [I] */
    float *ffn_out_w, *ffn_out_b;              /* [H,I], [H] */
    float *ln2_g, *ln2_b;                      /* output LayerNorm */
} splade_layer;

struct splade_model {
    splade_config cfg;
    float *word_emb;       /* [V,H] */
    float *pos_emb;        /* [P,H] */
    float *type_emb;       /* [T,H] */
    float *emb_ln_g, *emb_ln_b;
    splade_layer *layers;  /* [num_layers] */
    float *mlm_dense_w, *mlm_dense_b;  /* MLM transform: dense [H,H] + GELU + LayerNorm */
    float *mlm_ln_g, *mlm_ln_b;
    float *decoder_w;      /* [V,H]; aliases word_emb when tied */
    float *decoder_b;      /* [V] */
    splade_tokenizer *tokenizer;
    uint64_t fingerprint;  /* identifies weights + vocab + tokenizer and config.json settings that change the
                            * output (docs/FORMAT.md, "Model fingerprint"); stored in indexes */
    char *dir;             /* model folder it was loaded from */
    float *query_w;        /* [V] inference-free query table (query_table.c); NULL: queries use the forward */
    uint64_t query_fp;     /* FNV-1a of query_w (0 without a table); part of `fingerprint` */
    void *storage_;        /* private */
};

/* query_table.c: fills m->query_w from idf.json (kind 1) or a SparseStaticEmbedding safetensors. */
int splade_query_table_load(splade_model *m, int kind, const char *path, const char *qdir, const char *model_dir);

#endif
