/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fdio.h: writing a whole buffer to a file descriptor, and the small
 * read-whole / write-once files of /proc, /sys and run files. Libc only, so
 * the gpuaas-spawner program links it too; fd_write_all is also
 * async-signal-safe, so a forked child may call it.
 */
#ifndef GPUAAS_FDIO_H
#define GPUAAS_FDIO_H

#include <stddef.h>
#include <sys/types.h>

/* Writes all len bytes, retrying short writes and EINTR. 0, or -1 with errno. */
int fd_write_all(int fd, const void *buf, size_t len);

/* n in decimal into out (room for 21 bytes), not NUL-terminated; returns the length. */
size_t put_decimal(char *out, long long n);

/* Writes s to an existing file such as a cgroup control file. 0, or -1 with errno. */
int file_write_string(const char *path, const char *s);

/* Reads at most max - 1 bytes of a file into buf, NUL-terminated. The length, or -1 with errno. */
ssize_t file_read_small(const char *path, char *buf, size_t max);

#endif
