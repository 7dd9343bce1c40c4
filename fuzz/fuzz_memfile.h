/* Fuzz helper: exposes a byte buffer as a path (memfd), for parsers that take file names. */
#ifndef SPLADE_FUZZ_MEMFILE_H
#define SPLADE_FUZZ_MEMFILE_H

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes data to a fresh memfd; path receives "/proc/self/fd/N". Returns the fd or -1. */
static int memfile_open(const uint8_t *data, size_t size, char *path, size_t path_len)
{
    int fd = memfd_create("fuzz", 0);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    snprintf(path, path_len, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
