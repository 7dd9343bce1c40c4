/* The GPU encoder's state, shared by the files that implement it (internal):
 *   gpu_encoder.cu  create / free, workspaces, the forward pass, profiling, the entry points
 *   gpu_weights.cu  the model's upload (one device buffer, bf16 or fp32 storage)
 *   gpu_gemm.cu     cuBLASLt GEMMs: plan cache, per-shape algorithm tuning, fp32 compute choice
 *   gpu_gemm_small.cu  small batches' GEMMs without cuBLASLt (a fast start)
 * The kernels they launch live in gpu_layers.cu, gpu_attention*.cu, gpu_sparse.cu and
 * src/lmhead_fused/. */
#ifndef SPLADE_ENCODER_GPU_ENCODER_STATE_CUH
#define SPLADE_ENCODER_GPU_ENCODER_STATE_CUH

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "encoder/gpu_encoder.h"
#include "encoder/gpu_encoder_internal.h"
#include "encoder/gpu_kernels.cuh"
#include "encoder/gpu_sparse.cuh"
#include "splade.h"

#define TRY(call)                      \
    do {                               \
        int rc_ = (call);              \
        if (rc_ != SPLADE_OK)          \
            return rc_;                \
    } while (0)

namespace splade_gpu_enc {

using splade_gpu::bf16;

constexpr size_t kAlign = 256;  // cuBLASLt's heuristics assume 256-byte aligned operands
constexpr size_t kLtWorkspace = 32u << 20;
constexpr int kPlanCache = 24;
constexpr int kProfEvents = 4096;

inline size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

/* GEMM weights and biases are bf16, or float in SPLADE_PRECISION_FP32 (storage type S). */
struct LayerW {
    void *qkv_w, *qkv_b, *ao_w, *ao_b, *fi_w, *fi_b, *fo_w, *fo_b;
    float *ln1_g, *ln1_b, *ln2_g, *ln2_b;
};

struct TunedAlgo {
    bool used = false;
    int N = 0, K = 0;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    cublasLtMatmulAlgo_t algo;
};
constexpr int kTuned = 16;

struct GemmPlan {
    bool used = false;
    int T = 0, N = 0, K = 0;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulAlgo_t algo;
};

}  // namespace splade_gpu_enc

struct splade_gpu_encoder {
    splade_config cfg;
    splade_lmhead_kind head;
    int activation = 0;  // splade_activation of the model: the LM head's second log1p
    bool fp32 = false;  // SPLADE_PRECISION_FP32: float storage everywhere (es = 4), else bf16 (es = 2)
    size_t es = sizeof(splade_gpu::bf16);
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    int H, I, V, L, heads, hd, P;
    bool gelu_tanh;
    int attn_q;    // query rows per attention tile of that version
    bool attn_wgmma = false;  // bf16 head size 64 on Hopper: gpu_attention_wgmma.cu (else gpu_attention.cu)
    int ffn_chunk;  // tokens per FFN slice (caps the [slice, I] intermediate); 0: whole batch

    cudaStream_t stream = nullptr;
    cublasLtHandle_t lt = nullptr;    // created with its workspace on the first cuBLASLt GEMM (ensure_lt)
    cublasHandle_t cublas = nullptr;  // created for the naive LM head only (ensure_cublas)
    int small_T = 64;        // $SPLADE_GPU_SMALL_GEMM: batches of <= small_T tokens skip cuBLASLt; 0: never
    bool small_now = false;  // this batch's GEMMs run in gpu_gemm_small.cu (set per forward)

    void *wbuf = nullptr;
    size_t wbytes = 0;
    std::vector<splade_gpu_enc::LayerW> layers;
    void *word = nullptr, *mlm_w = nullptr, *mlm_b = nullptr, *dec_w = nullptr;  // storage type
    float *pos = nullptr, *type0 = nullptr, *emb_g = nullptr, *emb_b = nullptr, *mlm_g = nullptr,
          *mlm_beta = nullptr, *dec_b = nullptr;

    /* activations for up to cap_T tokens */
    void *abuf = nullptr;
    size_t cap_T = 0, abytes = 0;
    bool poison = false;  /* $SPLADE_GPU_POISON: fill activations with huge values before each forward */
    void *X = nullptr, *ctx = nullptr, *tmp = nullptr, *big = nullptr;  // storage type (bf16 or float)

    /* per-batch metadata: ids[T], pos[T], seq_start[B], seq_len[B], tiles[n] */
    void *meta_d = nullptr, *meta_h = nullptr;
    size_t meta_bytes = 0;

    float *out_d = nullptr;
    size_t out_cap = 0;  // floats
    splade_gpu::SparseWs sparse;  // the compacted output's buffers (gpu_sparse.cu)
    void *lt_ws = nullptr;
    void *head_ws = nullptr;
    size_t head_ws_bytes = 0;

    splade_gpu_enc::GemmPlan plans[splade_gpu_enc::kPlanCache];
    int plan_next = 0;
    int device = 0;    // the CUDA device it lives on: set before every call (any thread may call)
    bool tune = true;  // time cuBLASLt's top candidates once per GEMM shape (SPLADE_GPU_GEMM_TUNE=0: off)
    splade_gpu_enc::TunedAlgo tuned[splade_gpu_enc::kTuned];
    int n_tuned = 0;
    cudaEvent_t tune_ev[2] = {nullptr, nullptr};

    bool prof_on = false;
    cudaEvent_t ev[splade_gpu_enc::kProfEvents] = {};
    bool prof_ok = true;  // false once an event could not be created
    int ev_cat[splade_gpu_enc::kProfEvents / 2];
    int ev_n = 0;
    bool ev_created = false;
    double prof_ms[SPLADE_GPU_PROF_N] = {0};
};

namespace splade_gpu_enc {

/* gpu_encoder.cu: stage timing around launches (no-ops unless profiling is on) */
int prof_begin(splade_gpu_encoder *g, int cat);
int prof_end(splade_gpu_encoder *g);

/* gpu_weights.cu */
int check_config(const splade_model *m);   /* what the GPU forward supports */
int upload_model(splade_gpu_encoder *g, const splade_model *m);

/* gpu_gemm.cu: Y[T,N] = X[T,K] · W[N,K]ᵀ (+ bias) with epilogue epi, on g's stream */
int gemm(splade_gpu_encoder *g, const void *X, const void *W, const void *bias, void *Y, int T, int N, int K,
         cublasLtEpilogue_t epi);
int pick_fp32_compute(splade_gpu_encoder *g);
void gemm_plans_free(splade_gpu_encoder *g);
int ensure_lt(splade_gpu_encoder *g);      /* cuBLASLt's handle and workspace, once */
int ensure_cublas(splade_gpu_encoder *g);  /* cuBLAS's handle on g's stream, once */

/* gpu_gemm_small.cu: whether a batch of T tokens in B sequences runs there (bf16 only), and the
 * GEMM itself (the epilogue: bias, then the tanh GELU when gelu) */
bool gemm_small_fits(const splade_gpu_encoder *g, int T, int B);
int gemm_small(splade_gpu_encoder *g, const void *X, const void *W, const void *bias, void *Y, int T, int N, int K,
               bool gelu);

}  // namespace splade_gpu_enc

#endif
