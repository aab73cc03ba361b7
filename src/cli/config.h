/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h: the client's config file, which keeps the server URL and the
 * token between runs. It is plain `key = value` lines ('#' starts a
 * comment), created with mode 0600 in a directory of mode 0700 because it
 * holds a secret. Its path is $GPUAAS_CONFIG, else
 * $XDG_CONFIG_HOME/gpuaas/config, else ~/.config/gpuaas/config.
 */
#ifndef GPUAAS_CLI_CONFIG_H
#define GPUAAS_CLI_CONFIG_H

#include <stdbool.h>

struct cli_config {
    char *server;    /* NULL when not set; owned */
    char *token;     /* NULL when not set; owned */
    bool loose_mode; /* the file was readable or writable by others */
};

/* Frees the members and leaves the struct empty; accepts an empty struct. */
void config_release(struct cli_config *cfg);

/*
 * The config file path from the environment; caller frees. Returns NULL when
 * neither GPUAAS_CONFIG, XDG_CONFIG_HOME nor HOME is set.
 */
char *config_default_path(void);

/*
 * Reads path into *ret_cfg (which the caller releases). A missing file gives
 * an empty config and returns 0. Unknown keys are ignored. Returns 0, or -1
 * with a message in err (err_size bytes) when the file cannot be read or a
 * line is malformed.
 */
int config_load(const char *path, struct cli_config *ret_cfg, char *err, size_t err_size);

/*
 * Writes cfg to path, replacing it atomically (a temporary file renamed over
 * it), with mode 0600; missing parent directories are created with mode 0700.
 * Unset members are left out. Values may not contain control characters.
 * Returns 0, or -1 with a message in err.
 */
int config_save(const char *path, const struct cli_config *cfg, char *err, size_t err_size);

#endif
