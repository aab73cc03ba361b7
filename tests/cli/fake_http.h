/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_http.h: a scripted HTTP server on 127.0.0.1 for the CLI's tests. It
 * answers the requests it receives, one per connection, with the replies it
 * was given in order, and keeps each request's raw text for the test to
 * check. Also helpers to capture what a command prints. Header-only so that
 * each test executable stays one .c file.
 */
#ifndef GPUAAS_TEST_FAKE_HTTP_H
#define GPUAAS_TEST_FAKE_HTTP_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/buf.h"

#define FAKE_MAX 16

struct fake_reply {
    int status;
    const char *body; /* NULL for none */
};

struct fake_http {
    int fd;
    int port;
    char url[64];
    pthread_t thread;
    struct fake_reply replies[FAKE_MAX];
    size_t n_replies;
    char *requests[FAKE_MAX]; /* raw text of each request received; owned */
    size_t n_requests;
};

#define FAKE_UNUSED __attribute__((unused))

static FAKE_UNUSED size_t fake_content_length(const char *head)
{
    const char *p = strcasestr(head, "\r\nContent-Length:");
    return p ? (size_t)strtoul(p + 17, NULL, 10) : 0;
}

static FAKE_UNUSED void *fake_serve(void *arg)
{
    struct fake_http *f = arg;

    for (size_t i = 0; i < f->n_replies; i++) {
        struct pollfd pfd = {f->fd, POLLIN, 0};
        struct buf req;
        char chunk[4096], *head_end = NULL, *out;
        const struct fake_reply *r = &f->replies[i];
        int c;

        if (poll(&pfd, 1, 5000) <= 0)
            break; /* the client made fewer requests than scripted */
        c = accept(f->fd, NULL, NULL);
        if (c < 0)
            break;
        buf_init(&req, 1 << 20);
        for (;;) {
            ssize_t n = recv(c, chunk, sizeof(chunk), 0);
            if (n <= 0)
                break;
            buf_append(&req, chunk, (size_t)n);
            head_end = strstr(req.data, "\r\n\r\n");
            if (head_end &&
                req.len >= (size_t)(head_end + 4 - req.data) + fake_content_length(req.data))
                break;
        }
        f->requests[f->n_requests++] = buf_detach(&req, NULL);
        out = xasprintf("HTTP/1.1 %d Fake\r\nContent-Type: application/json\r\n"
                        "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                        r->status, r->body ? strlen(r->body) : 0, r->body ? r->body : "");
        send(c, out, strlen(out), MSG_NOSIGNAL);
        free(out);
        close(c);
    }
    /* Requests beyond the script find the port closed instead of hanging. */
    close(f->fd);
    return NULL;
}

/* Starts a server that will give these replies in order. */
static FAKE_UNUSED void fake_start(struct fake_http *f, const struct fake_reply *replies, size_t n)
{
    struct sockaddr_in a = {0};
    socklen_t len = sizeof(a);

    memset(f, 0, sizeof(*f));
    assert(n <= FAKE_MAX);
    if (n)
        memcpy(f->replies, replies, n * sizeof(*replies));
    f->n_replies = n;
    f->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert(f->fd >= 0);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(f->fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(f->fd, 16) < 0 ||
        getsockname(f->fd, (struct sockaddr *)&a, &len) < 0)
        abort();
    f->port = ntohs(a.sin_port);
    snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d", f->port);
    pthread_create(&f->thread, NULL, fake_serve, f);
}

/* Waits for the scripted replies to be used up (or 5 s of silence). */
static FAKE_UNUSED void fake_wait(struct fake_http *f)
{
    pthread_join(f->thread, NULL);
}

/* Frees the requests kept; after fake_wait. */
static FAKE_UNUSED void fake_free(struct fake_http *f)
{
    for (size_t i = 0; i < f->n_requests; i++)
        free(f->requests[i]);
    f->n_requests = 0;
}

/* A port nothing listens on (bound, then closed). */
static FAKE_UNUSED int fake_dead_port(void)
{
    struct sockaddr_in a = {0};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        abort();
    close(fd);
    return ntohs(a.sin_port);
}

/* ---- capturing a stream (stdout or stderr) ---- */

struct capture {
    int fd;    /* the stream's descriptor */
    int saved; /* its original target */
    FILE *stream;
    char path[64];
};

static FAKE_UNUSED void capture_start(struct capture *cap, FILE *stream)
{
    int tmp;

    cap->stream = stream;
    cap->fd = fileno(stream);
    snprintf(cap->path, sizeof(cap->path), "/tmp/test_cli_capture.XXXXXX");
    tmp = mkstemp(cap->path);
    assert(tmp >= 0);
    fflush(stream);
    cap->saved = dup(cap->fd);
    dup2(tmp, cap->fd);
    close(tmp);
}

/* Restores the stream; returns what was written (caller frees). */
static FAKE_UNUSED char *capture_end(struct capture *cap)
{
    struct buf b;
    char chunk[4096];
    ssize_t n;
    int fd;

    fflush(cap->stream);
    dup2(cap->saved, cap->fd);
    close(cap->saved);
    buf_init(&b, 1 << 24);
    buf_puts(&b, "");
    fd = open(cap->path, O_RDONLY);
    while (fd >= 0 && (n = read(fd, chunk, sizeof(chunk))) > 0)
        buf_append(&b, chunk, (size_t)n);
    if (fd >= 0)
        close(fd);
    unlink(cap->path);
    return buf_detach(&b, NULL);
}

#endif
