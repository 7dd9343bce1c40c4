/* Top-k heap (see topk.h). */
#include "query/topk.h"

static void sift_down(topk *t, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < t->n && topk_worse(t->h[l], t->h[m]))
            m = l;
        if (r < t->n && topk_worse(t->h[r], t->h[m]))
            m = r;
        if (m == i)
            return;
        topk_hit tmp = t->h[i];
        t->h[i] = t->h[m];
        t->h[m] = tmp;
        i = m;
    }
}

void topk_push(topk *t, topk_hit x)
{
    if (t->k <= 0)
        return;
    if (t->n == t->k) {
        t->h[0] = x;
        sift_down(t, 0);
        return;
    }
    int i = t->n++;
    while (i > 0 && topk_worse(x, t->h[(i - 1) / 2])) {
        t->h[i] = t->h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    t->h[i] = x;
}

void topk_offer(topk *t, topk_hit x)
{
    if (t->n < t->k || topk_worse(t->h[0], x))
        topk_push(t, x);
}

int topk_sorted(topk *t, splade_hit *out)
{
    int n = t->n;
    for (int i = n - 1; i >= 0; i--) {
        out[i] = (splade_hit){t->h[0].doc, t->h[0].score};
        t->h[0] = t->h[--t->n];
        sift_down(t, 0);
    }
    return n;
}

void topk_drop(topk *t, uint32_t lo, uint32_t hi)
{
    int k = 0;
    for (int i = 0; i < t->n; i++)
        if (t->h[i].doc < lo || t->h[i].doc >= hi)
            t->h[k++] = t->h[i];
    t->n = k;
    for (int i = k / 2; i-- > 0;)
        sift_down(t, i);
}
