/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c: the gpuaas command-line client's entry point: global flags, the
 * table of commands, and dispatch. A command is one file exporting
 * cmd_<name>(argc, argv); add it to the table below. Words that name a
 * resource of the model (orgs, projects, ...) go to the generic verbs in
 * cmd_resource.c.
 */
#include "base/common.h"

#include "cli/args.h"
#include "cli/cli.h"

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static int cmd_version(int argc, char **argv);

static const struct command commands[] = {
    {"login", cmd_login, "check a server URL and token, and save them"},
    {"logout", cmd_logout, "remove the saved token"},
    {"whoami", cmd_whoami, "show the user of the token and its roles"},
    {"run", cmd_run, "submit a workload: gpuaas run --flavor F -- COMMAND"},
    {"ps", cmd_ps, "list workloads (unfinished ones unless --all)"},
    {"show", cmd_show, "show a workload, its allocations and events"},
    {"cancel", cmd_cancel, "cancel workloads"},
    {"logs", cmd_logs, "a workload's output (-f to follow)"},
    {"queue", cmd_queue, "queued work per project, in order, with reasons"},
    {"events", cmd_events, "workload events in time order"},
    {"timeline", cmd_timeline, "who held which GPU when"},
    {"preemptions", cmd_preemptions, "the preemption ledger (list, show ID)"},
    {"capacity", cmd_capacity, "capacity, free and guaranteed GPUs per class"},
    {"usage", cmd_usage, "rated usage of a month; `usage verify` checks the ledger"},
    {"invoice", cmd_invoice, "invoices: list, show, draft, issue, pay, credit, export, verify"},
    {"cost", cmd_cost, "showback: pool cost, used and idle, by pool, project, org or manager"},
    {"inventory", cmd_inventory, "every GPU you may see; inventory import FILE | export"},
    {"history", cmd_history, "history import FILE.json: finished past work, simulated (admins)"},
    {"version", cmd_version, "print the client's version"},
};

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("gpuaas %s\n", CLI_VERSION);
    return CLI_OK;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gpuaas [--server URL] [--token TOKEN] [-o table|json] <command> [<args>]\n"
               "\nCommands:\n");
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        fprintf(f, "  %-24s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nResources: gpuaas <resource> list|show|create|update|delete [<args>]\n");
    for (size_t i = 0; i < model_n_resources; i++) {
        const struct resource_def *def = model_resources[i];
        const char *alias = args_resource_short(def);
        char word[64];

        if (strcmp(alias, def->name) != 0)
            snprintf(word, sizeof(word), "%s (%s)", def->name, alias);
        else
            snprintf(word, sizeof(word), "%s", def->name);
        fprintf(f, "  %-24s %s\n", word, def->help);
    }
    fprintf(f,
            "\nGlobal flags:\n"
            "  --server URL             gpuaasd's address (also GPUAAS_SERVER, or saved by login)\n"
            "  --token TOKEN            API token (also GPUAAS_TOKEN, or saved by login)\n"
            "  -o, --output FORMAT      table (the default) or json\n"
            "  -h, --help               this help (a command's: gpuaas <command> --help)\n"
            "  --version                the client's version\n"
            "\nExit status: 0 success, 1 error, 2 usage error.\n");
}

static int dispatch(int argc, char **argv)
{
    static char help_flag[] = "--help";
    char *help_argv[3] = {NULL, help_flag, NULL};
    int i = 1, rc;

    while (i < argc && argv[i][0] == '-') {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return CLI_OK;
        }
        if (strcmp(argv[i], "--version") == 0)
            return cmd_version(0, NULL);
        rc = cli_take_global_flag(NULL, argc, argv, &i);
        if (rc == 0)
            return cli_usage_error(NULL, "unknown flag '%s'", argv[i]);
        if (rc != 1)
            return rc;
    }
    if (i >= argc) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (strcmp(argv[i], "help") == 0) {
        if (i + 1 < argc) {
            /* gpuaas help <command> == gpuaas <command> --help */
            help_argv[0] = argv[i + 1];
            argv = help_argv;
            argc = 2;
            i = 0;
        } else {
            usage(stdout);
            return CLI_OK;
        }
    }
    for (size_t k = 0; k < ARRAY_SIZE(commands); k++) {
        if (strcmp(argv[i], commands[k].name) == 0)
            return commands[k].fn(argc - i, argv + i);
    }
    if (args_find_resource(argv[i]))
        return cmd_resource(argc - i, argv + i);
    return cli_usage_error(NULL, "unknown command or resource '%s'", argv[i]);
}

int main(int argc, char **argv)
{
    int rc = dispatch(argc, argv);

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
