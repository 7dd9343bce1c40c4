/* Placeholder until the GPU encoder lands: reports the missing piece instead of faking it. */
#include "splade.h"
#include "splade/gpu.h"

extern "C" int splade_gpu_encoder_create(const splade_model *, splade_lmhead_kind, splade_gpu_encoder **out)
{
    if (out)
        *out = nullptr;
    return splade_fail(SPLADE_ERR_UNSUPPORTED, "GPU encoder not implemented yet");
}

extern "C" int splade_gpu_encoder_forward(splade_gpu_encoder *, const int32_t *, const int32_t *, int32_t, float *)
{
    return splade_fail(SPLADE_ERR_UNSUPPORTED, "GPU encoder not implemented yet");
}

extern "C" void splade_gpu_encoder_free(splade_gpu_encoder *) {}
