/* SPDX-License-Identifier: Apache-2.0 */
/*
 * script.c: batch scripts for `gpuaas run --script` (script.h). Directives
 * are read only from the script's head, as sbatch reads `#SBATCH`: a
 * directive after the first command is a comment, so that a script's
 * behaviour never depends on a line buried in its body.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/fdio.h"
#include "cli/cli.h"
#include "cli/script.h"
#include "cli/work.h"

#define DIRECTIVE "#GPUAAS"

static void push_word(struct run_script *s, char *w)
{
    ALLOC_GROW(s->words, s->n_words + 1, s->cap_words);
    s->words[s->n_words++] = w;
}

/*
 * Splits one directive's text into words as a shell would: whitespace
 * separates, '...' is literal, "..." and bare text take backslash escapes,
 * and a word starting with '#' ends the line (a comment). 0, or -1 for an
 * unterminated quote.
 */
static int split_words(struct run_script *s, const char *p, const char *end)
{
    char *w = xmalloc((size_t)(end - p) + 1);

    while (p < end) {
        size_t n = 0;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p == end || *p == '#')
            break;
        while (p < end && *p != ' ' && *p != '\t') {
            char q = *p;
            if (q == '\'' || q == '"') {
                p++;
                while (p < end && *p != q) {
                    if (q == '"' && *p == '\\' && p + 1 < end && strchr("\"\\$`", p[1]))
                        p++;
                    w[n++] = *p++;
                }
                if (p == end) {
                    free(w);
                    return -1;
                }
                p++;
            } else {
                if (q == '\\' && p + 1 < end)
                    p++;
                w[n++] = *p++;
            }
        }
        push_word(s, xstrndup(w, n));
    }
    free(w);
    return 0;
}

int script_read(const char *path, size_t max, struct run_script *ret)
{
    char *text = xmalloc(max + 2);
    ssize_t len = file_read_small(path, text, max + 2);
    const char *p;
    int line = 0;

    memset(ret, 0, sizeof(*ret));
    if (len < 0) {
        free(text);
        return cli_usage_error("run", "--script %s: %s", path, strerror(errno));
    }
    if ((size_t)len > max) {
        free(text);
        return cli_usage_error("run", "--script %s: longer than %zu bytes", path, max);
    }
    if (memchr(text, '\0', (size_t)len)) {
        free(text);
        return cli_usage_error("run", "--script %s: not a text file", path);
    }
    ret->text = text;
    for (p = text; *p; line++) {
        const char *eol = strchr(p, '\n'), *end = eol ? eol : p + strlen(p);
        const char *q = p;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
        if (line == 0 && strncmp(p, "#!", 2) == 0) {
            /* the interpreter line */
        } else if (q < end && *q != '#' && *q != '\r') {
            break; /* the first command: directives end here */
        } else if (strncmp(q, DIRECTIVE, strlen(DIRECTIVE)) == 0 &&
                   (q + strlen(DIRECTIVE) == end || strchr(" \t", q[strlen(DIRECTIVE)]))) {
            const char *args = q + strlen(DIRECTIVE);
            if (end > args && end[-1] == '\r')
                end--;
            if (split_words(ret, args, end) < 0) {
                script_release(ret);
                return cli_usage_error("run", "--script %s, line %d: a quote is not closed", path,
                                       line + 1);
            }
        }
        p = eol ? eol + 1 : end;
    }
    for (int i = 0; i < ret->n_words; i++) {
        const char *w = ret->words[i];
        if (strcmp(w, "--") == 0 || strcmp(w, "--script") == 0 || strncmp(w, "--script=", 9) == 0) {
            int rc = cli_usage_error("run", "--script %s: '%s' cannot be a " DIRECTIVE " directive",
                                     path, w);
            script_release(ret);
            return rc;
        }
    }
    return 0;
}

/* The interpreter a `#!` line names ("sh" for none), without its directory or env. */
static char *interpreter_of(const char *text)
{
    const char *p = text + 2, *end;
    char *name, *slash;

    if (strncmp(text, "#!", 2) != 0)
        return xstrdup("sh");
    while (*p == ' ' || *p == '\t')
        p++;
    end = p + strcspn(p, " \t\r\n");
    name = xstrndup(p, (size_t)(end - p));
    slash = strrchr(name, '/');
    if (slash && strcmp(slash + 1, "env") == 0) {
        /* #!/usr/bin/env NAME */
        free(name);
        p = end + strspn(end, " \t");
        end = p + strcspn(p, " \t\r\n");
        name = xstrndup(p, (size_t)(end - p));
        slash = strrchr(name, '/');
    }
    if (slash)
        memmove(name, slash + 1, strlen(slash + 1) + 1);
    return name;
}

char *script_command(const struct run_script *s, const char *name, const char *args,
                     char **ret_interp)
{
    char *interp = interpreter_of(s->text), *quoted, *out;

    *ret_interp = NULL;
    if (strcmp(interp, "sh") == 0 || strcmp(interp, "dash") == 0) {
        free(interp);
        /* Every backend runs /bin/sh -c COMMAND: the script itself, its arguments set first. */
        return args ? xasprintf("set -- %s\n%s", args, s->text) : xstrdup(s->text);
    }
    if (strcmp(interp, "bash") != 0) {
        *ret_interp = interp;
        return NULL;
    }
    free(interp);
    quoted = work_join_command(1, (char *const[]){s->text});
    {
        char *qname = work_join_command(1, (char *const[]){(char *)name});
        out = xasprintf("exec bash -c %s %s%s%s", quoted, qname, args ? " " : "", args ? args : "");
        free(qname);
    }
    free(quoted);
    return out;
}

void script_release(struct run_script *s)
{
    for (int i = 0; i < s->n_words; i++)
        free(s->words[i]);
    free(s->words);
    free(s->text);
    memset(s, 0, sizeof(*s));
}
