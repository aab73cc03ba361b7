/* SPDX-License-Identifier: Apache-2.0 */
/*
 * recover.h: `gpuaasd recover-admin`, the break-glass for when no admin can
 * sign in any more (docs/operations.md).
 */
#ifndef GPUAAS_DAEMON_RECOVER_H
#define GPUAAS_DAEMON_RECOVER_H

/*
 * Runs `gpuaasd recover-admin [USER] [--KEY VALUE ...]` (argv[0] is
 * "recover-admin"): the settings as gpuaasd reads them (--db, --config, the
 * environment), USER "admin" unless given. Returns the exit status.
 */
int cmd_recover_admin(int argc, char **argv);

#endif
