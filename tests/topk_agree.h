/* Top-k term agreement between two dense SPLADE vectors (a GPU one against the CPU reference):
 * used by tests/test_encoder_backends.c and bench/bench_gpu_agreement.c. Header-only. */
#ifndef SPLADE_TOPK_AGREE_H
#define SPLADE_TOPK_AGREE_H

enum { TA_MAX_K = 64 };

/* The k (<= TA_MAX_K) largest entries of v, by weight descending, ties to the lower index;
 * returns how many were placed (min(k, V)). */
static inline int ta_top(const float *v, int V, int k, int *idx, float *val)
{
    int n = 0;
    for (int i = 0; i < V; i++) {
        const float x = v[i];
        if (n == k && !(x > val[n - 1]))
            continue;
        int j = n < k ? n++ : n - 1;
        while (j > 0 && val[j - 1] < x) {
            val[j] = val[j - 1];
            idx[j] = idx[j - 1];
            j--;
        }
        val[j] = x;
        idx[j] = i;
    }
    return n;
}

/* Over the CPU vector's top-k terms with a positive weight (kk of them): strict = the GPU's kk
 * largest are the same set; tolerant = every CPU term missing from it weighs at most the CPU's
 * kk-th weight + tol (a swap among near-ties); near = the CPU's weights at ranks k and k+1 lie
 * within tol of each other (a near-tie at the boundary). */
static inline void ta_compare(const float *gpu, const float *cpu, int V, int k, float tol, int *strict,
                              int *tolerant, int *near)
{
    int ci[TA_MAX_K + 1], gi[TA_MAX_K];
    float cv[TA_MAX_K + 1], gv[TA_MAX_K];
    if (k > TA_MAX_K)
        k = TA_MAX_K;
    const int nc = ta_top(cpu, V, k + 1, ci, cv);
    int kk = 0;
    while (kk < k && kk < nc && cv[kk] > 0)
        kk++;
    *near = nc > k && cv[k - 1] > 0 && cv[k - 1] - cv[k] < tol;
    const int ng = ta_top(gpu, V, kk, gi, gv);
    const float kth = kk ? cv[kk - 1] : 0;
    int same = ng == kk, ok = 1;
    for (int j = 0; j < kk; j++) {
        int found = 0;
        for (int i = 0; i < ng && !found; i++)
            found = gi[i] == ci[j];
        if (!found) {
            same = 0;
            if (cv[j] > kth + tol)
                ok = 0;
        }
    }
    *strict = same;
    *tolerant = ok;
}

#endif
