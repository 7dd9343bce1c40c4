/* Large buffers on transparent huge pages (big_alloc.h). */
#include "common/big_alloc.h"

#include <stdlib.h>
#include <sys/mman.h>

void *splade_big_alloc(size_t n)
{
    void *p = NULL;
    size_t huge = (size_t)2 << 20;
    if (n < huge) /* on a cache line still: callers run aligned vector loads on these */
        return posix_memalign(&p, 64, n ? n : 1) == 0 ? p : NULL;
    if (posix_memalign(&p, huge, n) != 0)
        return NULL;
    madvise(p, (n + huge - 1) & ~(huge - 1), MADV_HUGEPAGE); /* a hint: failure is harmless */
    return p;
}
