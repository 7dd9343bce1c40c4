/* Fuzz target: config.json parsing must accept or reject, never crash. */
#include <stdint.h>

#include "fuzz_memfile.h"
#include "splade.h"
#include "splade/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = memfile_open(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    splade_config cfg;
    if (splade_config_load(path, &cfg) == SPLADE_OK &&
        (cfg.hidden_size <= 0 || cfg.num_heads <= 0 || cfg.hidden_size % cfg.num_heads != 0))
        __builtin_trap(); /* an accepted config must be usable by the forward pass */
    close(fd);
    return 0;
}
