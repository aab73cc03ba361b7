/* SPDX-License-Identifier: Apache-2.0 */
/* fdio.c: see fdio.h. Only libc: the spawner program builds this file too. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
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

size_t put_decimal(char *out, long long n)
{
    char tmp[24];
    size_t len = 0, k = 0;
    unsigned long long v = n < 0 ? (unsigned long long)(-(n + 1)) + 1 : (unsigned long long)n;
    do
        tmp[k++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    if (n < 0)
        out[len++] = '-';
    while (k)
        out[len++] = tmp[--k];
    return len;
}

int file_write_string(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC), rc, saved;
    if (fd < 0)
        return -1;
    rc = fd_write_all(fd, s, strlen(s));
    saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

ssize_t file_read_small(const char *path, char *buf, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), saved;
    size_t len = 0;
    if (fd < 0)
        return -1;
    while (len + 1 < max) {
        ssize_t n = read(fd, buf + len, max - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (max > 0)
        buf[len] = '\0';
    return (ssize_t)len;
}
