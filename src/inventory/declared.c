/* SPDX-License-Identifier: Apache-2.0 */
/*
 * declared.c: the local-gpus setting, a list of this machine's GPUs written
 * by hand ("h100:8", "0:h100:GPU-...,1:h100:GPU-..."). It stands in for the
 * NVML and nvidia-smi collectors where they are not configured or find
 * nothing, so a local cluster also has GPUs (and can be tested) on a machine
 * without one. The grammar is in inventory.h; errors name the entry.
 */
#include "base/common.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/parse.h"
#include "inventory/inventory-int.h"

#define ENTRY_MAX 200

/* s[0..n) without leading and trailing spaces and tabs, into out; false when too long. */
static bool trimmed(const char *s, size_t n, char *out, size_t size)
{
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n >= size)
        return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
    }
    return true;
}

static bool valid_class(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] < 'a' || s[0] > 'z')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

static bool valid_uuid(const char *s)
{
    size_t n = strlen(s);
    if (n <= 4 || n >= INV_UUID_MAX || strncmp(s, "GPU-", 4) != 0)
        return false;
    for (size_t i = 4; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-'))
            return false;
    }
    return true;
}

struct list {
    struct inv_declared_gpu v[INV_DECLARED_MAX];
    size_t n;
    int32_t next; /* the index after the highest one so far */
};

/* Adds one GPU; a message (static or in why) when it cannot be. */
static const char *add(struct list *l, int32_t index, const char *cls, const char *uuid)
{
    if (l->n == INV_DECLARED_MAX)
        return "more than 1024 GPUs";
    if (index >= INV_DECLARED_MAX)
        return "indices go from 0 to 1023";
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].index == index)
            return "this index is declared twice";
        if (*uuid && strcmp(l->v[i].uuid, uuid) == 0)
            return "this UUID is declared twice";
    }
    l->v[l->n].index = index;
    snprintf(l->v[l->n].cls, sizeof(l->v[l->n].cls), "%s", cls);
    snprintf(l->v[l->n].uuid, sizeof(l->v[l->n].uuid), "%s", uuid);
    l->n++;
    if (index + 1 > l->next)
        l->next = index + 1;
    return NULL;
}

/* One entry; NULL, or why it is refused. */
static const char *entry(struct list *l, char *text)
{
    char f[3][ENTRY_MAX];
    size_t n = 0;
    const char *p = text, *why = NULL;
    int64_t num;

    for (;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (n == 3)
            return "too many ':' (CLASS:COUNT, INDEX:CLASS or INDEX:CLASS:UUID)";
        trimmed(p, len, f[n++], ENTRY_MAX); /* the entry fits, so every field does */
        if (!colon)
            break;
        p = colon + 1;
    }
    if (n == 1)
        return "expected CLASS:COUNT, INDEX:CLASS or INDEX:CLASS:UUID";
    if (n == 2 && !all_digits(f[0])) { /* CLASS:COUNT */
        if (!valid_class(f[0]))
            return "a GPU class is lower-case letters, digits, '-', '_' and '.', starting "
                   "with a letter";
        if (parse_int64(f[1], 1, INV_DECLARED_MAX, &num) < 0)
            return "the count must be a number from 1 to 1024";
        for (int64_t i = 0; i < num && !why; i++)
            why = add(l, l->next, f[0], "");
        return why;
    }
    if (parse_int64(f[0], 0, INV_DECLARED_MAX - 1, &num) < 0)
        return "the index must be a number from 0 to 1023";
    if (!valid_class(f[1]))
        return "a GPU class is lower-case letters, digits, '-', '_' and '.', starting with a "
               "letter";
    if (n == 3 && !valid_uuid(f[2]))
        return "a UUID is 'GPU-' then letters, digits and '-'";
    return add(l, (int32_t)num, f[1], n == 3 ? f[2] : "");
}

int inv_declared_parse(const char *spec, struct inv_declared_gpu **ret_gpus, struct error_info *ei)
{
    struct list *l;
    const char *p = spec ? spec : "";
    size_t k = 0;
    int rc = 0;

    while (*p == ' ' || *p == '\t')
        p++;
    if (!*p) {
        *ret_gpus = NULL;
        return 0;
    }
    l = xcalloc(1, sizeof(*l));
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char text[ENTRY_MAX];
        const char *why;
        k++;
        if (!trimmed(p, len, text, sizeof(text)))
            why = "too long";
        else if (!*text)
            why = "empty";
        else
            why = entry(l, text);
        if (why) {
            rc = errinfo_set(ei, ERR_INVALID, NULL, "entry %zu ('%.*s'): %s", k,
                             (int)(len > 60 ? 60 : len), p, why);
            break;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    if (rc == 0) {
        rc = (int)l->n;
        *ret_gpus = xcalloc(l->n, sizeof(l->v[0]));
        memcpy(*ret_gpus, l->v, l->n * sizeof(l->v[0]));
    }
    free(l);
    return rc;
}
