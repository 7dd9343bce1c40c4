/* Fuzz target: the safetensors header parser and dtype conversion on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>

#include "encoder/safetensors.h"
#include "fuzz_memfile.h"
#include "splade.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = memfile_open(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    st_file f;
    if (st_open(path, &f) == SPLADE_OK) {
        for (int i = 0; i < f.n; i++) {
            const st_tensor *t = &f.t[i];
            if (t->dtype == ST_OTHER || st_find(&f, t->name) == NULL)
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
