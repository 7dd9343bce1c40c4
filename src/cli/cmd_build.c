/* Placeholder until the owning work lands; fails loudly rather than pretending. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_build(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "splade-index %s: not implemented yet\n", argv[0]);
    return 1;
}
