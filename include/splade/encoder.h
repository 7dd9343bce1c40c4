/* Text -> SPLADE sparse vectors, on the CPU or the GPU. Owner: src/encoder/encoder.c
 * (CPU forward: forward_cpu.c; GPU forward: .cu files in src/encoder/ behind the internal
 * src/encoder/gpu_encoder.h, in libsplade-cuda.so, loaded on first use). */
#ifndef SPLADE_ENCODER_H
#define SPLADE_ENCODER_H

#include "splade.h"

#include <stddef.h>
#include <stdint.h>

#include "splade/model.h"
#include "splade/sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SPLADE_DEVICE_AUTO = 0, SPLADE_DEVICE_CPU = 1, SPLADE_DEVICE_CUDA = 2 } splade_device;

/* The GPU's LM head: the fused kernel (default: matmul, max over the sequence and log1p(relu) in
 * one pass, no [batch, seq, vocab] logits) or the naive control (cuBLAS GEMM, then a reduction). */
typedef enum { SPLADE_LMHEAD_FUSED = 0, SPLADE_LMHEAD_NAIVE = 1 } splade_lmhead_kind;

/* Numeric format of the GPU encoder. BF16 (default): bf16 weights and activations, fp32
 * accumulation and normalisation, tensor cores (fast; vectors within ~1e-2 rel-L2 of the CPU's).
 * FP32: fp32 weights and activations, fp32 GEMMs without TF32, SIMT attention and LM head,
 * exact-erf GELU: reproduces the fp32 CPU forward (rel-L2 ~1e-6), at a fraction of the speed.
 * The CPU forward is fp32 unless splade_encoder_opts.cpu_precision asks for bf16 (below).
 * docs/GPU_ENCODER.md ("Precision"). */
typedef enum { SPLADE_PRECISION_BF16 = 0, SPLADE_PRECISION_FP32 = 1 } splade_precision;

/* The CPU forward's number format (issue #13): fp32 by default; bf16 (opt-in) rounds every GEMM's
 * inputs (weights and activations) to bf16 with fp32 accumulation, through oneDNN on AMX or
 * AVX512-BF16 (a CPU without them gets SPLADE_ERR_UNSUPPORTED). int8 (opt-in) quantizes every
 * GEMM's weights per output channel (s8, once) and its activations per token (u8, dynamic) with s32
 * accumulation, through oneDNN on AMX-INT8 or VNNI (a CPU without VNNI gets SPLADE_ERR_UNSUPPORTED);
 * attention, softmax and LayerNorm stay fp32. int8 exists on the CPU only: with it, device AUTO
 * encodes on the CPU and device CUDA is an error. Quality and speed:
 * bench/results/encoder-cpu-2026-11-25.md, bench/results/encoder-cpu-int8-2026-11-25.md. */
typedef enum { SPLADE_CPU_FP32 = 0, SPLADE_CPU_BF16 = 1, SPLADE_CPU_INT8 = 2 } splade_cpu_precision;

/* Encoder options' GPU list (issue #17): at most this many entries; n_devices = SPLADE_DEVICES_ALL
 * asks for every visible GPU. */
#define SPLADE_MAX_DEVICES 16
#define SPLADE_DEVICES_ALL (-1)

/* 1 if a CUDA device is usable (name written to `name`), else 0 with the reason in `name`. */
SPLADE_API int splade_gpu_probe(char *name, size_t name_len);

typedef struct {
    splade_device device;        /* AUTO: GPU if usable, else CPU (a one-line SPLADE_LOG_INFO notice
                                    says which, and why not the GPU) */
    int threads;                 /* CPU threads; <= 0: all cores */
    int32_t max_length;          /* tokens incl. [CLS]/[SEP]; <= 0: 256, capped at the model's */
    int32_t batch_size;          /* documents per forward pass; <= 0: device default. On a GPU, 1
                                  * (one text per forward, <= 512 tokens) never loads cuBLASLt: such
                                  * batches run the encoder's own GEMMs, which starts ~0.1-0.2 s faster */
    splade_lmhead_kind lmhead;   /* GPU head: fused (default) or naive */
    float threshold;             /* drop weights <= threshold (0: keep all positive) */
    int32_t top_k;               /* keep the top_k terms; <= 0: all */
    int quiet;                   /* no device notice in the log */
    int32_t max_batch_tokens;    /* memory cap: a batch over this many tokens is treated as out of
                                    memory and split (as a real GPU OOM is); <= 0: no cap (the CLI
                                    sets it from $SPLADE_MAX_BATCH_TOKENS) */
    splade_precision precision;  /* GPU numeric format: BF16 (default, fast) or FP32 (reproduces
                                    the CPU vectors); the CPU's format is cpu_precision */
    int gpu_dense_output;        /* GPU only: 1 copies the whole [B, V] output to the host and
                                    sparsifies it there (the path before issue #3's compaction);
                                    0 (default): the GPU compacts it and only the nonzeros cross
                                    (splade_gpu_encoder_forward_sparse). Same vectors bit for bit */
    size_t cpu_batch_bytes;      /* CPU only: a forward's activations plus its [batch, vocab] output
                                    stay under this many bytes (a batch is run in consecutive parts,
                                    at least one sequence each); 0: SPLADE_CPU_BATCH_BYTES */
    const volatile int *cancel;  /* NULL (default): never cancelled. Else read before each forward batch
                                    (CPU and GPU): once *cancel != 0 the call in flight frees what it
                                    produced and returns SPLADE_ERR_CANCELLED; the encoder stays usable
                                    (clear the flag and call again). Set it from another thread or a
                                    signal handler to stop a long call within one batch */
    int32_t n_devices;           /* GPUs to encode on at once (device CUDA only; issue #17). 0 (default):
                                    one, the current CUDA device. > 0: one encoder per entry of devices[]
                                    (a repeated id runs several encoders on that GPU), each with its own
                                    stream and thread; the batches are the ones a single GPU forms and
                                    the vectors are bit for bit the same (docs/GPU_ENCODER.md, "Several
                                    GPUs"). SPLADE_DEVICES_ALL: every visible GPU */
    int32_t devices[SPLADE_MAX_DEVICES]; /* CUDA device ids, n_devices of them */
    splade_cpu_precision cpu_precision;  /* CPU: FP32 (0, default), BF16 or INT8 (opt-in; see the enum) */
} splade_encoder_opts;

/* Fills *o with the defaults (every field documented above at its default value: device AUTO, bf16,
 * the fused head, no caps). Callers that init first and then set the fields they know keep compiling
 * and keep today's behaviour when later versions add fields. */
SPLADE_API void splade_encoder_opts_init(splade_encoder_opts *o);

/* The CPU's default memory cap per forward (cpu_batch_bytes = 0): 256 MiB. */
#define SPLADE_CPU_BATCH_BYTES ((size_t)256 << 20)

/* Thread safety: one call at a time per encoder (it owns scratch buffers and, on the GPU, a stream);
 * it runs its own CPU threads inside a call. Several encoders may share one model and run at once
 * on different threads. Created and freed on any thread. */
typedef struct splade_encoder splade_encoder;

/* opts may be NULL (defaults). The encoder keeps `model` (borrowed, must outlive it). */
SPLADE_API int splade_encoder_create(const splade_model *model, const splade_encoder_opts *opts,
                                     splade_encoder **out);

/* Encodes n texts. out[i] receives owned arrays (splade_sparse_free each).
 * n_truncated (may be NULL) receives how many texts were cut at max_length.
 * lens may be NULL (texts NUL-terminated). An empty text encodes as [CLS] [SEP] alone: a
 * defined, usually small vector. Ill-formed UTF-8 bytes are dropped by the tokenizer. */
SPLADE_API int splade_encoder_encode(splade_encoder *e, const char *const *texts, const size_t *lens, int n,
                                     splade_sparse *out, int *n_truncated);

/* Texts per splade_encoder_encode call of `splade-index encode` (TEXT arguments and --input) and, with
 * the default --batch, of `build` (32 x 8): the unit in which texts are sorted by length into batches. */
#define SPLADE_ENCODE_CHUNK 256

/* Groups of texts handed to the encoder in one call by splade_encoder_encode_chunked, and on GPUs by
 * `build` and `encode --input`: a call ends when its last batch does, so the GPUs of a list idle
 * ~half a batch each per call; with 8 groups of 256 a build on four H200s lost ~1 s in 18
 * (bench/results/multi-gpu-2026-11-26.md). Each group is still batched as a call of its own. */
#define SPLADE_ENCODE_GROUPS 16

/* splade_encoder_encode over consecutive groups of `chunk` texts (chunk <= 0: one group, i.e.
 * splade_encoder_encode itself), into out[0..n) in order. Each call sorts its texts by length into
 * batches, and a text's weights can differ in the last bit with the batch it lands in (the GEMM's
 * shape picks the kernel), so the grouping is part of the result: chunk = SPLADE_ENCODE_CHUNK gives
 * exactly the vectors `splade-index encode` prints, 0 those `query --queries` searches with. Token
 * ids are held for SPLADE_ENCODE_GROUPS groups at a time, which go to the encoder in one call (the GPUs of a list share
 * its batches). On failure (or cancellation) nothing is left in out. */
SPLADE_API int splade_encoder_encode_chunked(splade_encoder *e, const char *const *texts, const size_t *lens, int n,
                                             int chunk, splade_sparse *out, int *n_truncated);

/* Encodes n token-id sequences (each with its own [CLS]/[SEP], at most the model's max
 * position): sequence i is ids[offsets[i] .. offsets[i+1]). Bypasses the tokenizer, for tests
 * and callers that tokenized already. out[i] as in splade_encoder_encode. */
SPLADE_API int splade_encoder_encode_ids(splade_encoder *e, const int32_t *ids, const int32_t *offsets, int n,
                                         splade_sparse *out);

/* The effective max_length (tokens incl. [CLS]/[SEP]) after defaults and the model's cap. */
SPLADE_API int32_t splade_encoder_max_length(const splade_encoder *e);

/* "auto" (or NULL), "cpu", "cuda"/"gpu" -> device; SPLADE_ERR_INVALID_ARG otherwise (the --device flag). */
SPLADE_API int splade_parse_device(const char *s, splade_device *d);

/* The --device flag with GPU lists: what splade_parse_device accepts, plus "cuda:all" (every visible
 * GPU) and "cuda:I,J,..." (those device ids, at most SPLADE_MAX_DEVICES, each 0..999; a repeated id
 * is allowed and runs several encoders on one GPU). Sets o->device, o->n_devices and o->devices
 * (n_devices 0 for a plain device). SPLADE_ERR_INVALID_ARG for anything else ("cuda:", "cuda:x",
 * "cuda:-1", "cuda:0,", an empty entry), o unchanged. */
SPLADE_API int splade_parse_devices(const char *s, splade_encoder_opts *o);

/* "bf16" (or NULL), "fp32" -> precision; "int8" (CPU-only) leaves the GPU's default, bf16;
 * SPLADE_ERR_INVALID_ARG otherwise (the --precision flag). */
SPLADE_API int splade_parse_precision(const char *s, splade_precision *p);
/* "fp32", "bf16" or "int8" -> the CPU's format (NULL: fp32, the CPU default); anything else fails. */
SPLADE_API int splade_parse_cpu_precision(const char *s, splade_cpu_precision *p);

/* The device actually in use (CPU or CUDA after AUTO resolved). */
SPLADE_API splade_device splade_encoder_device(const splade_encoder *e);
SPLADE_API void splade_encoder_free(splade_encoder *e);

/* Start-up overlap (issue #13 item 4): loading the GPU code and creating the CUDA context of the
 * GPU(s) opts would use take ~0.3 s, which can run on a background thread while the caller loads the
 * model; loading cuBLASLt and its own set-up follow, except for opts->batch_size 1 (see batch_size),
 * whose batches never need it. splade_encoder_warm_start begins that
 * (nothing for SPLADE_DEVICE_CPU, or where no GPU code can load); splade_encoder_warm_finish waits for
 * it and frees it (NULL-safe). Call it after splade_encoder_create (create waits for whatever it
 * needs, and the cuBLASLt set-up overlaps its upload of the weights) or before, and on every path
 * after a start, so that no thread is left inside CUDA's initialisation when the program exits.
 * Optional: create does the same work when not warmed. */
typedef struct splade_gpu_warmup splade_gpu_warmup;
SPLADE_API splade_gpu_warmup *splade_encoder_warm_start(const splade_encoder_opts *opts);
SPLADE_API void splade_encoder_warm_finish(splade_gpu_warmup *w);

#ifdef __cplusplus
}
#endif
#endif
