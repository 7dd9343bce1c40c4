/* The CPU backend (backend.h): the exact fp32 forward of forward_cpu.c on the model's host weights,
 * or its opt-in bf16 / int8 forms (weights converted at upload). */
#include <stdlib.h>

#include "common/fail.h"
#include "encoder/backend.h"
#include "encoder/forward_cpu.h"
#include "encoder/forward_cpu_bf16.h"
#include "encoder/forward_cpu_int8.h"
#include "encoder/lmhead_screen_cpu.h"
#include "encoder/forward_cpu_packed.h"
#include "encoder/gemm_cpu.h"
#include "encoder/model_internal.h"
#include "common/settings.h"
#include "splade.h"

typedef struct {
    const splade_model *m;
    int threads;
    size_t batch_bytes; /* cap on one forward's activations and output */
    splade_cpu_precision precision;
    splade_cpu_bf16 *bf; /* bf16 weights (opt-in), made at upload */
    splade_cpu_int8 *q8; /* int8 weights (opt-in), made at upload */
    splade_head_screen *screen; /* fp32: the head's bf16 screen where the CPU has bf16 (else NULL) */
    int64_t tokens;             /* forwarded so far: the screen is made once they pay for it */
    int screen_tried;
    splade_cpu_packed *packed;  /* fp32: packed weights for few-row forwards (else NULL) */
    int64_t small_tokens;       /* forwarded in few-row forwards so far: the same rule */
    int packed_tried;
} cpu_state;

/* Tokens after which the fp32 head's screen is made. Making it (a bf16 copy of the decoder) costs
 * ~80 ms for bert-base on one core, 17% of a one-query `encode`; it saves ~0.24 ms per document
 * token and ~0.06 per query token (bench/results/cpu-head-screen-2026-11-25.md): from a batch of
 * two documents, or after a few hundred query tokens, on. */
enum { SCREEN_AFTER_TOKENS = 512 };

/* Few-row tokens after which the packed copy (forward_cpu_packed.h) is made. It costs 0.1-0.7 s in
 * all (one layer per forward) and 340 MB for bert-base, and saves ~5 ms of a 25-token query, ~11 ms
 * of an 8-token one on one core (bench/results/cpu-query-packed-2026-11-26.md): a one-query
 * `encode` or `query` never makes it, a process encoding queries one at a time does after ~10 of
 * them, complete ~13 queries later. */
enum { PACK_AFTER_TOKENS = 256 };

static int cpu_create(const splade_encoder_opts *o, int device, int tune, void **state, char *name, size_t n)
{
    (void)device, (void)tune;
    cpu_state *s = calloc(1, sizeof *s);
    if (!s)
        return splade_fail(SPLADE_ERR_NOMEM, "CPU encoder");
    s->threads = o->threads;
    s->precision = o->cpu_precision;
    s->batch_bytes = o->cpu_batch_bytes ? o->cpu_batch_bytes : SPLADE_CPU_BATCH_BYTES;
    if (n)
        name[0] = '\0';
    *state = s;
    return SPLADE_OK;
}

/* The fp32 head's screen (lmhead_screen_cpu.h) for a max-pooled model, once SCREEN_AFTER_TOKENS
 * were forwarded, unless $SPLADE_LMHEAD_CPU asks for the plain head. Tried once; without it (a CPU
 * without bf16, no memory for the copy) the plain fp32 head runs, with the same results. */
static void maybe_make_screen(cpu_state *s, int32_t tokens)
{
    s->tokens += tokens;
    if (s->screen_tried || s->tokens < SCREEN_AFTER_TOKENS)
        return;
    s->screen_tried = 1;
    const splade_config *c = splade_model_config(s->m);
    if (s->precision != SPLADE_CPU_FP32 || c->pooling == SPLADE_POOL_SUM || splade_settings_get()->lmhead_cpu_full)
        return;
    if (splade_head_screen_create(s->m->decoder_w, s->m->decoder_b, c->vocab_size, c->hidden_size, &s->screen))
        splade_clear_error();
}

/* The packed copy once PACK_AFTER_TOKENS tokens went through few-row fp32 forwards on a CPU with
 * AVX-512 or AVX2 + FMA, unless $SPLADE_GEMM_CPU=inplace: its memory then, and one layer per few-row forward
 * after (forward_cpu_packed.h). Tried once; without it (no memory) the in-place kernel runs, with
 * the same results. */
static void maybe_make_packed(cpu_state *s, int32_t tokens)
{
    if (s->precision != SPLADE_CPU_FP32 || tokens > SPLADE_GEMM_SMALL_M || splade_settings_get()->gemm_cpu_inplace)
        return;
    if (!s->packed) {
        s->small_tokens += tokens;
        if (s->packed_tried || s->small_tokens < PACK_AFTER_TOKENS)
            return;
        s->packed_tried = 1;
        if (!splade_gemm_packed_usable() || splade_cpu_packed_create(s->m, &s->packed)) {
            splade_clear_error(); /* (no memory: the in-place kernel, the same results) */
            return;
        }
    }
    splade_cpu_packed_step(s->packed, s->m, s->threads > 0 ? s->threads : 1);
}

static int cpu_upload(void *state, const splade_model *m)
{
    cpu_state *s = state;
    s->m = m; /* the weights are already fp32 in host memory */
    if (s->precision == SPLADE_CPU_BF16 && !s->bf)
        return splade_cpu_bf16_create(m, &s->bf); /* SPLADE_ERR_UNSUPPORTED on a CPU without bf16 */
    if (s->precision == SPLADE_CPU_INT8 && !s->q8)
        return splade_cpu_int8_create(m, &s->q8); /* SPLADE_ERR_UNSUPPORTED on a CPU without VNNI */
    return SPLADE_OK;
}

/* Bytes a CPU forward of sequences [0, n) takes beyond the weights: the activations (x, q, k, v,
 * context, residual: 6 x hidden, and the FFN's intermediate, fp32 per token; forward_cpu.c) and
 * the [n, vocab] output. */
static size_t forward_bytes(const splade_config *c, const int32_t *offsets, int32_t n)
{
    return sizeof(float) * ((size_t)(offsets[n] - offsets[0]) * (6 * (size_t)c->hidden_size + c->intermediate_size) +
                            (size_t)n * c->vocab_size);
}

/* How many sequences from the first fit the cap (at least one): `--batch 1500` took 2.2 GB. */
static int32_t cpu_fit(void *state, const int32_t *offsets, int32_t B)
{
    const cpu_state *s = state;
    const splade_config *c = splade_model_config(s->m);
    int32_t n = 1;
    while (n < B && forward_bytes(c, offsets, n + 1) <= s->batch_bytes)
        n++;
    return n;
}

static int cpu_forward(void *state, const int32_t *ids, const int32_t *offsets, int32_t B, float *out_dense)
{
    cpu_state *s = state;
    maybe_make_screen(s, offsets[B] - offsets[0]);
    maybe_make_packed(s, offsets[B] - offsets[0]);
    return splade_forward_cpu_lowp(s->m, s->bf, s->q8, s->screen, s->packed, ids, offsets, B, out_dense,
                                   s->threads);
}

static void cpu_free(void *state)
{
    cpu_state *s = state;
    if (s) {
        splade_cpu_bf16_free(s->bf);
        splade_cpu_int8_free(s->q8);
        splade_head_screen_free(s->screen);
        splade_cpu_packed_free(s->packed);
    }
    free(s);
}

const splade_encoder_backend splade_backend_cpu = {
    .name = "cpu",
    .device = SPLADE_DEVICE_CPU,
    .default_batch = 16,
    .create = cpu_create,
    .upload = cpu_upload,
    .fit = cpu_fit,
    .forward = cpu_forward,
    .forward_sparse = NULL,
    .free = cpu_free,
};
