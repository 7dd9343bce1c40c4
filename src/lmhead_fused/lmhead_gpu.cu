/* Placeholder until the GPU LM heads land. */
#include "splade.h"
#include "splade/lmhead.h"

extern "C" size_t splade_lmhead_workspace_bytes(splade_lmhead_kind, const splade_lmhead_args *) { return 0; }

extern "C" int splade_lmhead_gpu(splade_lmhead_kind, const splade_lmhead_args *, void *, size_t, void *, void *)
{
    return splade_fail(SPLADE_ERR_UNSUPPORTED, "GPU LM head not implemented yet");
}
