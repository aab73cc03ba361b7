/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model.c: model strings to GPU class names, from one table. A model name
 * is cut into lower-case words (at spaces, dashes, underscores, slashes);
 * the first table entry whose words appear consecutively names the family;
 * families sold with several memory sizes (A100 40/80 GB, V100 16/32 GB)
 * add the size from a "<N>gb" word, or the entry's default. docs/inventory.md
 * shows the table with examples.
 */
#include "base/common.h"
#include "base/err.h"
#include "inventory/inventory.h"

#define MAX_WORDS 16
#define WORD_LEN 24

static const struct family {
    const char *words[3]; /* consecutive words, NULL-terminated */
    const char *cls;
    int default_gb; /* > 0: the class carries the memory size, this one when unsaid */
} families[] = {
    /* longest and most specific first */
    {{"gh200", NULL}, "gh200", 0},
    {{"gb200", NULL}, "gb200", 0},
    {{"b200", NULL}, "b200", 0},
    {{"b100", NULL}, "b100", 0},
    {{"h200", NULL}, "h200", 0},
    {{"h100", "nvl", NULL}, "h100-nvl", 0},
    {{"h100", NULL}, "h100", 0},
    {{"h800", NULL}, "h800", 0},
    {{"h20", NULL}, "h20", 0},
    {{"a100", NULL}, "a100", 40},
    {{"a800", NULL}, "a800", 80},
    {{"v100s", NULL}, "v100s", 0},
    {{"v100", NULL}, "v100", 16},
    {{"p100", NULL}, "p100", 16},
    {{"l40s", NULL}, "l40s", 0},
    {{"l40", NULL}, "l40", 0},
    {{"l4", NULL}, "l4", 0},
    {{"a10g", NULL}, "a10g", 0},
    {{"a10", NULL}, "a10", 0},
    {{"a30", NULL}, "a30", 0},
    {{"a40", NULL}, "a40", 0},
    {{"a16", NULL}, "a16", 0},
    {{"t4", NULL}, "t4", 0},
    {{"rtx", "a6000", NULL}, "rtx-a6000", 0},
    {{"rtx", "6000", "ada"}, "rtx-6000-ada", 0},
};

/* Words dropped from derived names: vendor and brand words. */
static const char *const noise[] = {"nvidia", "tesla", "geforce"};

static size_t split(const char *s, char words[MAX_WORDS][WORD_LEN])
{
    size_t n = 0, len = 0;
    for (const char *p = s;; p++) {
        char c = *p;
        bool sep = c == '\0' || c == ' ' || c == '\t' || c == '-' || c == '_' || c == '/' ||
                   c == '(' || c == ')' || c == ',';
        if (sep) {
            if (len > 0 && n < MAX_WORDS) {
                words[n][len] = '\0';
                n++;
            }
            len = 0;
            if (c == '\0')
                break;
            continue;
        }
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '+'))
            continue; /* anything else is dropped */
        if (n < MAX_WORDS && len + 1 < WORD_LEN)
            words[n][len++] = c;
    }
    return n;
}

/* "80gb" -> 80; 0 when the word is not a memory size. */
static int mem_gb(const char *w)
{
    int v = 0;
    size_t i = 0;
    for (; w[i] >= '0' && w[i] <= '9' && i < 4; i++)
        v = v * 10 + (w[i] - '0');
    return i > 0 && strcmp(w + i, "gb") == 0 ? v : 0;
}

static bool valid_profile(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n > 24 || p[0] < '0' || p[0] > '9' || !strstr(p, "g."))
        return false;
    for (; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '+'))
            return false;
    return true;
}

static int put(char *out, size_t size, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 > size)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < n; i++)
        out[*len + i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] - 'A' + 'a') : s[i];
    *len += n;
    out[*len] = '\0';
    return 0;
}

int inv_model_class(const char *model, const char *mig_profile, char *out, size_t size)
{
    char words[MAX_WORDS][WORD_LEN];
    size_t n, len = 0;
    int known = 0, rc = 0;

    if (!model || size == 0)
        return ERR_INVALID;
    if (mig_profile && *mig_profile && !valid_profile(mig_profile))
        return ERR_INVALID;
    n = split(model, words);
    for (size_t f = 0; f < ARRAY_SIZE(families) && !known; f++) {
        for (size_t i = 0; i < n && !known; i++) {
            size_t k = 0;
            while (k < 3 && families[f].words[k] && i + k < n &&
                   strcmp(words[i + k], families[f].words[k]) == 0)
                k++;
            if (k == 3 || !families[f].words[k]) {
                char gb[16];
                int mem = 0;
                known = 1;
                rc = put(out, size, &len, families[f].cls);
                if (families[f].default_gb > 0) {
                    for (size_t j = 0; j < n && !mem; j++)
                        mem = mem_gb(words[j]);
                    snprintf(gb, sizeof(gb), "-%dgb", mem ? mem : families[f].default_gb);
                    if (rc == 0)
                        rc = put(out, size, &len, gb);
                }
            }
        }
    }
    if (!known) {
        for (size_t i = 0; i < n && rc == 0; i++) {
            bool skip = false;
            for (size_t k = 0; k < ARRAY_SIZE(noise); k++)
                skip = skip || strcmp(words[i], noise[k]) == 0;
            if (skip)
                continue;
            if (len > 0)
                rc = put(out, size, &len, "-");
            if (rc == 0)
                rc = put(out, size, &len, words[i]);
        }
        if (rc == 0 && len == 0)
            return ERR_INVALID;
    }
    if (rc == 0 && mig_profile && *mig_profile) {
        rc = put(out, size, &len, "/");
        if (rc == 0)
            rc = put(out, size, &len, mig_profile);
    }
    return rc < 0 ? rc : known;
}

int inv_mig_profile_of_name(const char *name, char *out, size_t size)
{
    const char *p = NULL, *q;
    size_t n;

    if (size == 0)
        return ERR_TOO_LARGE;
    out[0] = '\0';
    for (q = name ? strstr(name, " MIG ") : NULL; q; q = strstr(q + 1, " MIG "))
        p = q + 5;
    if (!p)
        return ERR_INVALID;
    while (*p == ' ')
        p++;
    n = strlen(p);
    while (n > 0 && p[n - 1] == ' ')
        n--;
    if (n >= size)
        return ERR_TOO_LARGE;
    memcpy(out, p, n);
    out[n] = '\0';
    if (!valid_profile(out)) {
        out[0] = '\0';
        return ERR_INVALID;
    }
    return 0;
}

int64_t inv_mig_profile_mib(const char *profile)
{
    const char *p = profile ? strstr(profile, "g.") : NULL;
    int64_t gb = 0;
    size_t k = 0;

    if (!p || p == profile || !valid_profile(profile))
        return ERR_INVALID;
    for (p += 2; p[k] >= '0' && p[k] <= '9' && k < 5; k++)
        gb = gb * 10 + (p[k] - '0');
    if (k == 0 || k == 5 || gb == 0 || p[k] != 'g' || p[k + 1] != 'b' ||
        (p[k + 2] != '\0' && p[k + 2] != '+'))
        return ERR_INVALID;
    return gb * 1024;
}
