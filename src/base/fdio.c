/* SPDX-License-Identifier: Apache-2.0 */
/* fdio.c: see fdio.h. Only libc: the spawner program builds this file too. */
#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/fdio.h"

int fd_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
