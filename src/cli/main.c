/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c: the gpuaas command-line client's entry point. The table of
 * commands and dispatch are in commands.c (in the library, so tests run
 * whole command lines); here only what a process adds: a failed write of
 * the output is a failure.
 */
#include "base/common.h"

#include "cli/cli.h"

int main(int argc, char **argv)
{
    int rc = cli_main(argc, argv);

    /* Output that could not be written (a full disk, a closed pipe) is a failure. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        if (rc == CLI_OK) {
            if (errno != EPIPE)
                cli_error("could not write the output: %s", strerror(errno));
            rc = CLI_ERROR;
        }
    }
    return rc;
}
