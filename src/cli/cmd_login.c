/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_login.c: `gpuaas login`, which checks a server URL and token against
 * GET /v1/whoami and saves them in the config file, and `gpuaas logout`,
 * which removes the saved token.
 */
#include "base/common.h"

#include <termios.h>

#include "base/alloc.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/config.h"

#define TOKEN_MAX_LEN 4096

static void login_help(void)
{
    printf("usage: gpuaas login --server URL [--token TOKEN]\n\n"
           "Checks the server URL and token (GET /v1/whoami) and saves both in the config\n"
           "file (mode 0600): $GPUAAS_CONFIG, else $XDG_CONFIG_HOME/gpuaas/config, else\n"
           "~/.config/gpuaas/config. Without --token, or with --token -, the token is read\n"
           "from standard input (without echo on a terminal), which keeps it out of the\n"
           "process list and the shell history.\n\n"
           "  --server URL    http://HOST:PORT of gpuaasd; default: GPUAAS_SERVER, then\n"
           "                  the saved server\n"
           "  --token TOKEN   an API token (gpa_...)\n");
}

static void logout_help(void)
{
    printf("usage: gpuaas logout\n\n"
           "Removes the token from the config file; the server URL stays. The token itself\n"
           "stays valid until it expires or is revoked ('gpuaas tokens revoke ID').\n");
}

/* Reads one line from standard input, without echo on a terminal (caller frees). */
static char *read_token(void)
{
    struct termios old, quiet;
    bool tty = isatty(STDIN_FILENO) == 1;
    bool echo_off = false;
    char *line = NULL;
    size_t cap = 0, n;
    ssize_t len;

    if (tty) {
        fputs("Token: ", stderr);
        fflush(stderr);
        if (tcgetattr(STDIN_FILENO, &old) == 0) {
            quiet = old;
            quiet.c_lflag &= ~(tcflag_t)ECHO;
            echo_off = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0;
        }
    }
    len = getline(&line, &cap, stdin);
    if (echo_off) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        fputc('\n', stderr);
    }
    if (len < 0) {
        free(line);
        return NULL;
    }
    n = (size_t)len;
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' ||
                     line[n - 1] == '\t'))
        line[--n] = '\0';
    return line;
}

static bool safe_transport(const char *server)
{
    static const char *const hosts[] = {"http://127.", "http://localhost", "http://[::1]"};

    for (size_t i = 0; i < ARRAY_SIZE(hosts); i++) {
        if (strncmp(server, hosts[i], strlen(hosts[i])) == 0)
            return true;
    }
    return strncmp(server, "https://", 8) == 0;
}

static void wipe_free(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

int cmd_login(int argc, char **argv)
{
    struct cli_config cfg = {0};
    struct client c;
    const char *server;
    char *path = NULL, *token = NULL;
    char err[512];
    json_t *who = NULL;
    const char *name;
    int rc = CLI_ERROR;

    for (int i = 1; i < argc;) {
        if (cli_is_help(argv[i])) {
            login_help();
            return CLI_OK;
        }
        rc = cli_take_global_flag("login", argc, argv, &i);
        if (rc == 0)
            return cli_usage_error("login", "unexpected argument '%s'", argv[i]);
        if (rc != 1)
            return rc;
    }
    rc = CLI_ERROR;

    path = config_default_path();
    if (!path) {
        cli_error("cannot tell where to save the config file");
        cli_hint("set GPUAAS_CONFIG to its path, or HOME");
        return CLI_ERROR;
    }
    if (config_load(path, &cfg, err, sizeof(err)) < 0) {
        cli_error("%s", err);
        free(path);
        return CLI_ERROR;
    }
    server = cli_opts.server;
    if (!server)
        server = getenv("GPUAAS_SERVER");
    if (!server || !*server)
        server = cfg.server;
    if (!server || !*server) {
        config_release(&cfg);
        free(path);
        return cli_usage_error("login", "'login' needs --server URL");
    }
    if (cli_opts.token && strcmp(cli_opts.token, "-") != 0)
        token = xstrdup(cli_opts.token);
    else
        token = read_token();
    if (!token || !*token) {
        wipe_free(token);
        config_release(&cfg);
        free(path);
        return cli_usage_error("login", "no token given; use --token TOKEN or type it in");
    }

    if (client_init(&c, server, token) < 0) {
        rc = client_report(&c);
        goto out;
    }
    if (!safe_transport(c.server))
        cli_warn("'%s' is plain http: the token crosses the network unencrypted", c.server);
    if (client_request(&c, "GET", "/v1/whoami", NULL, &who) < 0) {
        if (c.status == 401)
            snprintf(c.err_hint, sizeof(c.err_hint),
                     "check the token; an admin can make one with 'gpuaas tokens create'");
        rc = client_report(&c);
        goto out;
    }

    free(cfg.server);
    cfg.server = xstrdup(c.server);
    wipe_free(cfg.token);
    cfg.token = xstrdup(token);
    if (config_save(path, &cfg, err, sizeof(err)) < 0) {
        cli_error("%s", err);
        goto out;
    }
    name = json_string_value(json_object_get(json_object_get(who, "user"), "name"));
    printf("logged in to %s as %s%s\n", c.server, name ? name : "(unknown user)",
           json_is_true(json_object_get(who, "admin")) ? " (admin)" : "");
    printf("saved the server and token in %s\n", path);
    if (getenv("GPUAAS_TOKEN") && *getenv("GPUAAS_TOKEN"))
        cli_warn("GPUAAS_TOKEN is set and is used instead of the saved token");
    if (getenv("GPUAAS_SERVER") && *getenv("GPUAAS_SERVER") &&
        strcmp(getenv("GPUAAS_SERVER"), c.server) != 0)
        cli_warn("GPUAAS_SERVER is set and is used instead of the saved server");
    rc = CLI_OK;
out:
    json_decref(who);
    client_release(&c);
    wipe_free(token);
    wipe_free(cfg.token);
    cfg.token = NULL;
    config_release(&cfg);
    free(path);
    return rc;
}

int cmd_logout(int argc, char **argv)
{
    struct cli_config cfg = {0};
    char *path;
    char err[512];
    int rc;

    for (int i = 1; i < argc;) {
        if (cli_is_help(argv[i])) {
            logout_help();
            return CLI_OK;
        }
        rc = cli_take_global_flag("logout", argc, argv, &i);
        if (rc == 0)
            return cli_usage_error("logout", "unexpected argument '%s'", argv[i]);
        if (rc != 1)
            return rc;
    }
    path = config_default_path();
    if (!path) {
        cli_error("cannot tell where the config file is; set GPUAAS_CONFIG or HOME");
        return CLI_ERROR;
    }
    if (config_load(path, &cfg, err, sizeof(err)) < 0) {
        cli_error("%s", err);
        free(path);
        return CLI_ERROR;
    }
    if (!cfg.token) {
        printf("not logged in: %s holds no token\n", path);
        rc = CLI_OK;
    } else {
        wipe_free(cfg.token);
        cfg.token = NULL;
        if (config_save(path, &cfg, err, sizeof(err)) < 0) {
            cli_error("%s", err);
            rc = CLI_ERROR;
        } else {
            printf("removed the token from %s\n", path);
            rc = CLI_OK;
        }
    }
    if (getenv("GPUAAS_TOKEN") && *getenv("GPUAAS_TOKEN"))
        cli_warn("GPUAAS_TOKEN is still set in the environment");
    config_release(&cfg);
    free(path);
    return rc;
}
