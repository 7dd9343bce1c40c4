/* Fuzz target: the safetensors header parser and dtype conversion on arbitrary bytes. An
 * accepted file must satisfy the reference implementation's layout rules: unique names, and
 * tensor data tiling the bytes after the header exactly (no overlap, alias, gap or tail). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encoder/safetensors.h"
#include "fuzz_memfile.h"
#include "splade.h"

static int by_begin(const void *pa, const void *pb)
{
    const st_tensor *a = *(const st_tensor *const *)pa, *b = *(const st_tensor *const *)pb;
    return a->data != b->data ? (a->data < b->data ? -1 : 1) : (a->nbytes > b->nbytes) - (a->nbytes < b->nbytes);
}

static void check_layout(const st_file *f)
{
    uint64_t hlen;
    memcpy(&hlen, f->map, 8);
    const st_tensor **order = malloc((size_t)(f->n + 1) * sizeof *order);
    if (!order)
        return;
    for (int i = 0; i < f->n; i++) {
        order[i] = &f->t[i];
        if (st_find(f, f->t[i].name) != &f->t[i])
            __builtin_trap(); /* a duplicate name */
    }
    qsort(order, (size_t)f->n, sizeof *order, by_begin);
    const uint8_t *next = f->map + 8 + hlen;
    for (int i = 0; i < f->n; i++) {
        if (order[i]->data != next)
            __builtin_trap(); /* overlap, alias or gap */
        next += order[i]->nbytes;
    }
    if (next != f->map + f->size)
        __builtin_trap(); /* data not covered to the end */
    free(order);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = memfile_open(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    st_file f;
    if (st_open(path, &f) == SPLADE_OK) {
        check_layout(&f);
        for (int i = 0; i < f.n; i++) {
            const st_tensor *t = &f.t[i];
            if (t->dtype == ST_OTHER)
                continue;
            size_t elem = t->dtype == ST_F32 ? 4 : 2;
            size_t n = t->nbytes / elem;
            float *dst = malloc((n ? n : 1) * sizeof *dst);
            if (dst)
                st_to_f32(t, dst, n); /* reads every byte the header promised */
            free(dst);
        }
        st_close(&f);
    }
    close(fd);
    return 0;
}
