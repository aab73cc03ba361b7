/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuaas-spawner: the local backend's process spawner as a program of its
 * own (src/backend/spawner.h). gpuaasd starts it with its end of a socket
 * pair as descriptor 3. Being small (libc only, a few dozen mappings, where
 * the daemon has hundreds) it forks each keeper several times faster than a
 * copy of the daemon could.
 */
#include <stdio.h>
#include <sys/socket.h>

#include "backend/spawner-proto.h"

int main(void)
{
    int type = 0;
    socklen_t len = sizeof(type);

    if (getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET) {
        fprintf(stderr, "gpuaas-spawner: gpuaasd starts this program; it is not run by hand\n");
        return 2;
    }
    spawner_helper_main(3);
}
