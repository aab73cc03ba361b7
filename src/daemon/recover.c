/* SPDX-License-Identifier: Apache-2.0 */
/*
 * recover.c: `gpuaasd recover-admin`, the break-glass. Run by the machine's
 * root (or the daemon's user: whoever may write the store) against the
 * store, offline: it makes one user an enabled global admin with a fresh
 * token, prints the token once and audits it as "break-glass". On an SQLite
 * store it refuses to run while a gpuaasd serves the store (the daemons hold
 * a shared claim on the file); on PostgreSQL, where daemons on other machines
 * cannot be seen, it runs beside them: the new token is looked up in the
 * store at its first use, like any new token.
 */
#include "base/common.h"

#include "api/api.h"
#include "daemon/config.h"
#include "daemon/recover.h"
#include "store/store.h"

static int fail(const char *what, const struct error_info *ei)
{
    fprintf(stderr, "gpuaasd recover-admin: %s%s%s\n", what, *what ? ": " : "",
            ei->code ? ei->message : "unknown error");
    return 1;
}

int cmd_recover_admin(int argc, char **argv)
{
    struct error_info ei = {0};
    struct store_options sopt = {.n_conns = 1};
    struct api_recovery rec;
    struct store *store = NULL;
    struct config cfg;
    const char *user = "admin";
    int rc;

    /* argv[0] is the command; a first argument that is no flag names the user. */
    if (argc > 1 && strncmp(argv[1], "--", 2) != 0) {
        user = argv[1];
        argv++;
        argc--;
    }
    if (config_load(argc, argv, &cfg, &ei) < 0)
        return fail("", &ei) + 1;
    if (cfg.show_help) {
        printf("usage: gpuaasd recover-admin [USER] [--db STORE] [--config FILE]\n\n"
               "Makes USER (default admin) an enabled admin with a new token, printed once.\n"
               "Stop gpuaasd first when the store is an SQLite file.\n");
        return 0;
    }
    sopt.busy_timeout_ms = cfg.busy_timeout_ms;
    sopt.sqlite_sync_full = true; /* one commit, and it must last */
    rc = store_open(cfg.db, &sopt, &store, &ei);
    if (rc >= 0)
        rc = store_claim(store, true, &ei);
    if (rc >= 0)
        rc = api_recover_admin(store, user, &rec, &ei);
    store_close(store);
    if (rc < 0)
        return fail("", &ei);
    printf("gpuaasd recover-admin: user '%s' (id %" PRId64 ")%s is an enabled admin. Its new API "
           "token, shown only this once:\n\n    %s\n\n"
           "Log in with: gpuaas login --server http://%s:%d --token <token>\n"
           "The change is in the audit log as action 'break-glass'.\n",
           user, rec.user_id, rec.created ? ", made now," : "", rec.token, cfg.listen_addr,
           cfg.listen_port);
    free(rec.token);
    return 0;
}
