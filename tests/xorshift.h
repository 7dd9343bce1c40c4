/* The search tests' random numbers: xorshift64 (13, 7, 17) on a state `rng` that the including test
 * seeds; rnd() returns 32 of its bits. Header-only. */
#ifndef SPLADE_TEST_XORSHIFT_H
#define SPLADE_TEST_XORSHIFT_H

#include <stdint.h>

static uint64_t rng;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

#endif
