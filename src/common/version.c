/* The version of the library that is loaded, which a program linked against libsplade.so.0 may
 * find newer than the SPLADE_VERSION it was compiled with. */
#include "splade.h"

const char *splade_version(void)
{
    return SPLADE_VERSION;
}
