/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fdio.h: writing a whole buffer to a file descriptor. Async-signal-safe and
 * libc only, so a forked child may call it and the gpuaas-spawner program
 * links it too.
 */
#ifndef GPUAAS_FDIO_H
#define GPUAAS_FDIO_H

#include <stddef.h>

/* Writes all len bytes, retrying short writes and EINTR. 0, or -1 with errno. */
int fd_write_all(int fd, const void *buf, size_t len);

#endif
