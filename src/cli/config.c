/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c: reading and writing the client's `key = value` config file.
 * Writes go through a 0600 temporary file renamed over the old one, so the
 * token is never readable by others, not even for a moment, and a crash
 * leaves either the old or the new file.
 */
#include "base/common.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/fdio.h"
#include "cli/config.h"

#define CONFIG_MAX_BYTES (64 * 1024)

void config_release(struct cli_config *cfg)
{
    free(cfg->server);
    free(cfg->token);
    cfg->server = cfg->token = NULL;
    cfg->loose_mode = false;
}

char *config_default_path(void)
{
    const char *p = getenv("GPUAAS_CONFIG");

    if (p && *p)
        return xstrdup(p);
    p = getenv("XDG_CONFIG_HOME");
    if (p && *p)
        return xasprintf("%s/gpuaas/config", p);
    p = getenv("HOME");
    if (p && *p)
        return xasprintf("%s/.config/gpuaas/config", p);
    return NULL;
}

static char *trim(char *s)
{
    char *end;
    while (*s == ' ' || *s == '\t')
        s++;
    end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
        end--;
    *end = '\0';
    return s;
}

static int parse_line(char *line, int lineno, const char *path, struct cli_config *cfg, char *err,
                      size_t err_size)
{
    char *s = trim(line), *eq, *key, *value;

    if (*s == '\0' || *s == '#')
        return 0;
    eq = strchr(s, '=');
    if (!eq) {
        snprintf(err, err_size, "config file '%s' line %d: expected 'key = value'", path, lineno);
        return -1;
    }
    *eq = '\0';
    key = trim(s);
    value = trim(eq + 1);
    if (strcmp(key, "server") == 0) {
        free(cfg->server);
        cfg->server = *value ? xstrdup(value) : NULL;
    } else if (strcmp(key, "token") == 0) {
        free(cfg->token);
        cfg->token = *value ? xstrdup(value) : NULL;
    }
    /* Unknown keys are ignored, so older clients can read newer files. */
    return 0;
}

int config_load(const char *path, struct cli_config *ret_cfg, char *err, size_t err_size)
{
    struct cli_config cfg = {0};
    struct stat st;
    char *data, *line, *next;
    ssize_t n;
    int fd, lineno = 0;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            *ret_cfg = cfg;
            return 0;
        }
        snprintf(err, err_size, "could not open config file '%s': %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > CONFIG_MAX_BYTES) {
        snprintf(err, err_size, "config file '%s' is not a regular file of at most %d bytes", path,
                 CONFIG_MAX_BYTES);
        close(fd);
        return -1;
    }
    data = xmalloc((size_t)st.st_size + 1);
    n = read(fd, data, (size_t)st.st_size);
    close(fd);
    if (n < 0) {
        snprintf(err, err_size, "could not read config file '%s': %s", path, strerror(errno));
        free(data);
        return -1;
    }
    data[n] = '\0';
    cfg.loose_mode = (st.st_mode & 077) != 0;
    for (line = data; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (parse_line(line, ++lineno, path, &cfg, err, err_size) < 0) {
            free(data);
            config_release(&cfg);
            return -1;
        }
    }
    free(data);
    *ret_cfg = cfg;
    return 0;
}

static bool valid_value(const char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    }
    return true;
}

/* Creates every missing directory above path's last component, mode 0700. */
static int make_parents(const char *path, char *err, size_t err_size)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    int rc = 0;

    if (!slash || slash == dir) {
        free(dir);
        return 0;
    }
    *slash = '\0';
    for (char *p = dir + 1; rc == 0; p++) {
        bool end = *p == '\0';
        if (*p != '/' && !end)
            continue;
        *p = '\0';
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
            snprintf(err, err_size, "could not create directory '%s': %s", dir, strerror(errno));
            rc = -1;
        }
        if (end)
            break;
        *p = '/';
    }
    free(dir);
    return rc;
}

int config_save(const char *path, const struct cli_config *cfg, char *err, size_t err_size)
{
    struct buf b;
    char *tmp;
    int fd, rc = -1;

    if ((cfg->server && !valid_value(cfg->server)) || (cfg->token && !valid_value(cfg->token))) {
        snprintf(err, err_size, "server and token may not contain control characters");
        return -1;
    }
    if (make_parents(path, err, err_size) < 0)
        return -1;

    buf_init(&b, CONFIG_MAX_BYTES);
    buf_puts(&b, "# gpuaas client configuration, written by 'gpuaas login'.\n"
                 "# It holds an API token: keep it private (mode 0600).\n");
    if (cfg->server)
        buf_printf(&b, "server = %s\n", cfg->server);
    if (cfg->token)
        buf_printf(&b, "token = %s\n", cfg->token);

    tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(err, err_size, "could not create '%s': %s", tmp, strerror(errno));
        goto out;
    }
    /* The mode given to open() is reduced by the umask; make it exact. */
    if (fchmod(fd, 0600) < 0 || fd_write_all(fd, b.data, b.len) < 0 || fsync(fd) < 0) {
        snprintf(err, err_size, "could not write '%s': %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        goto out;
    }
    if (close(fd) < 0 || rename(tmp, path) < 0) {
        snprintf(err, err_size, "could not write config file '%s': %s", path, strerror(errno));
        unlink(tmp);
        goto out;
    }
    rc = 0;
out:
    free(tmp);
    buf_release(&b);
    return rc;
}
