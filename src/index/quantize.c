/* Impact quantization and the default index location: small helpers both build and query use. */
#include "splade/index.h"

#include <math.h>
#include <stdlib.h>

uint8_t splade_quantize(float w, float max)
{
    if (!(w > 0) || !(max > 0))
        return 0;
    /* Computed in double so the result does not depend on FMA contraction or x87 excess precision. */
    double q = floor((double)w * 255.0 / (double)max + 0.5);
    if (q < 1)
        return 1; /* a positive weight never vanishes */
    return q > 255 ? 255 : (uint8_t)q;
}

const char *splade_index_dir(const char *arg)
{
    if (arg && *arg)
        return arg;
    const char *env = getenv("SPLADE_INDEX");
    return env && *env ? env : SPLADE_INDEX_DEFAULT_DIR;
}
