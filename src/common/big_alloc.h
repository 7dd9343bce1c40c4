/* Large buffers on transparent huge pages where the kernel allows them (madvise mode). Internal to
 * the library: the inversion touches over a GB of fresh memory per million documents, and faulting
 * it in 4 KB pages cost more CPU than the radix passes themselves (perf: clear_page + fault
 * handling); the approximate search's in-memory forward index and impact-ordered copies are read at
 * random (a candidate's entries, a window's head), where 4 KB pages cost a TLB miss per access; the
 * CPU encoder's packed weights (forward_cpu_packed.c) are 340 MB written once and streamed. */
#ifndef SPLADE_COMMON_BIG_ALLOC_H
#define SPLADE_COMMON_BIG_ALLOC_H

#include <stddef.h>

/* n bytes, 2 MB-aligned and advised onto huge pages when n >= 2 MB (else 64-byte aligned); NULL when
 * memory fails. Released with free(). */
void *splade_big_alloc(size_t n);

#endif
