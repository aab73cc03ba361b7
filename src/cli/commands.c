/* SPDX-License-Identifier: Apache-2.0 */
/*
 * commands.c: the gpuaas client's table of commands and what is generated
 * from it: dispatch, the top-level help, "did you mean" for mistyped words
 * and flags, and `gpuaas completion bash|zsh|fish`. A command is one file
 * exporting cmd_<name>(argc, argv); add it to the table below with its
 * sub-verbs and flags. Words that name a resource of the model go to the
 * generic verbs in cmd_resource.c, whose flags come from the model.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/units.h"

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
    const char *verbs; /* sub-verbs, space-separated; "" for none */
    const char *flags; /* flags, space-separated (the global ones apart) */
};

static int cmd_version(int argc, char **argv);
static int cmd_completion(int argc, char **argv);

/* test_cli_commands checks that each flag here is in the command's --help. */
static const struct command commands[] = {
    {"login", cmd_login, "check a server URL and token, and save them", "", "--server --token"},
    {"logout", cmd_logout, "remove the saved token", "", ""},
    {"whoami", cmd_whoami, "show the user of the token and its roles", "", ""},
    {"run", cmd_run, "submit a workload: gpuaas run --flavor F -- COMMAND", "",
     "--flavor --project --name --image --replicas --priority --auto --owned --opportunistic "
     "--instance --no-requeue --max-runtime --min-runtime --grace --duration --idempotency-key "
     "--gpus --gpu-class --script --after --after-ok --hold --array"},
    {"ps", cmd_ps, "list workloads (unfinished ones unless --all)", "",
     "--project --user --state --all --limit"},
    {"acct", cmd_acct, "finished work: elapsed time, GPU-hours and cost (as sacct)", "",
     "--project --user --since --limit"},
    {"share", cmd_share, "fair share: guaranteed, held, borrowed, who gets idle GPUs next", "", ""},
    {"show", cmd_show, "show a workload, its allocations and events", "", ""},
    {"cancel", cmd_cancel, "cancel workloads", "", ""},
    {"hold", cmd_hold, "hold queued workloads (not scheduled until released)", "", ""},
    {"release", cmd_release, "release held workloads", "", ""},
    {"logs", cmd_logs, "a workload's output (-f to follow)", "", "--follow --tail"},
    {"queue", cmd_queue, "queued work per project, in order, with reasons", "", "--project"},
    {"events", cmd_events, "workload events in time order", "",
     "--project --workload --follow --lines"},
    {"timeline", cmd_timeline, "who held which GPU when", "", "--project --node --since"},
    {"preemptions", cmd_preemptions, "the preemption ledger (list, show ID)", "list show",
     "--project"},
    {"capacity", cmd_capacity, "capacity, free and guaranteed GPUs per class", "", ""},
    {"usage", cmd_usage, "rated usage of a month; `usage verify` checks the ledger", "verify",
     "--period --org --project"},
    {"invoice", cmd_invoice, "invoices: list, show, draft, issue, pay, credit, export, verify",
     "list show draft issue pay credit export verify", "--org --period --reason --amount --format"},
    {"cost", cmd_cost, "showback: pool cost, used and idle, by pool, project, org or manager", "",
     "--by --period"},
    {"inventory", cmd_inventory, "every GPU you may see; inventory import FILE | export",
     "import export history",
     "--org --manager --cluster --class --state --owner --gpu --node --pool --workload "
     "--project --from --to"},
    {"whatif", cmd_whatif, "what-if on real history, simulated: replay a period with changes", "",
     "--period --from --to --quota --add-nodes --remove-nodes --lend-to-all --policy --grace "
     "--trace"},
    {"history", cmd_history, "history import FILE.json: finished past work, simulated (admins)",
     "import", ""},
    {"completion", cmd_completion, "a shell completion script: completion bash|zsh|fish", "", ""},
    {"version", cmd_version, "print the client's version", "", ""},
};

static const char *const global_flags = "--server --token --output --help";

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("gpuaas %s\n", CLI_VERSION);
    return CLI_OK;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gpuaas [--server URL] [--token TOKEN] [-o table|wide|json] <command> [<args>]\n"
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
            "  -o, --output FORMAT      table (the default), wide (a table, nothing cut) or json\n"
            "  -h, --help               this help (a command's: gpuaas <command> --help)\n"
            "  --version                the client's version\n"
            "\nExit status: 0 success, 1 error, 2 usage error.\n");
}

/* ---- words of the table ---- */

/* Splits a space-separated list into words appended to v (pointers into a copy kept in *keep). */
static size_t split_words(const char *list, const char **v, size_t n, size_t max, char **keep)
{
    char *copy = xstrdup(list), *save = NULL;

    for (char *w = strtok_r(copy, " ", &save); w && n < max; w = strtok_r(NULL, " ", &save))
        v[n++] = w;
    *keep = copy;
    return n;
}

static const struct command *find_command(const char *word)
{
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
        if (strcmp(word, commands[i].name) == 0)
            return &commands[i];
    }
    return NULL;
}

/* Every word that may start a command line: commands, resources and their aliases. */
static size_t first_words(const char **v, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < ARRAY_SIZE(commands) && n < max; i++)
        v[n++] = commands[i].name;
    for (size_t i = 0; i < model_n_resources && n + 2 < max; i++) {
        const struct resource_def *def = model_resources[i];
        if (!find_command(def->name)) /* preemptions: the command takes the word */
            v[n++] = def->name;
        if (strcmp(args_resource_short(def), def->name) != 0 &&
            !find_command(args_resource_short(def)))
            v[n++] = args_resource_short(def);
    }
    return n;
}

int cli_unknown_flag(const char *cmd, const char *flag)
{
    const struct command *c = find_command(cmd);
    const char *words[64];
    const char *close = NULL;
    char *keep = NULL;
    size_t n;

    if (c && strncmp(flag, "--", 2) == 0) {
        n = split_words(c->flags, words, 0, ARRAY_SIZE(words) - 1, &keep);
        words[n] = NULL;
        for (size_t i = 0; i < n; i++)
            words[i] += 2; /* compare without the dashes */
        close = cli_closest(flag + 2, words);
    }
    if (close)
        cli_usage_error(cmd, "unknown flag '%s' for '%s'; did you mean '--%s'?", flag, cmd, close);
    else
        cli_usage_error(cmd, "unknown flag '%s' for '%s'", flag, cmd);
    free(keep);
    return CLI_USAGE;
}

/* ---- completion ---- */

/* Appends the verbs resource def has through the API, space-separated. */
static void resource_words(struct buf *b, const struct resource_def *def)
{
    static const struct {
        const char *verb;
        enum action act;
    } verbs[] = {{"list", ACT_READ},
                 {"show", ACT_READ},
                 {"create", ACT_CREATE},
                 {"update", ACT_UPDATE},
                 {"delete", ACT_DELETE}};
    bool first = true;

    for (size_t i = 0; i < ARRAY_SIZE(verbs); i++) {
        if (def->need[verbs[i].act] == ROLE_NOBODY)
            continue;
        buf_printf(b, "%s%s", first ? "" : " ", verbs[i].verb);
        first = false;
    }
}

/* The flags of a resource as completion offers them: each field's flag, and the list flags. */
static void resource_flags(struct buf *b, const struct resource_def *def)
{
    buf_puts(b, "--limit --after --all");
    for (size_t i = 0; i < def->n_fields; i++) {
        const struct field_def *f = &def->fields[i];
        char *flag;
        size_t n;
        if ((f->flags & FF_SECRET) || ((f->flags & FF_READONLY) && !(f->flags & FF_FILTER)))
            continue;
        flag = args_flag_name(f);
        n = strlen(flag);
        if (f->type == FT_REF && n > 3 && strcmp(flag + n - 3, "-id") == 0)
            flag[n - 3] = '\0';
        buf_printf(b, " --%s", flag);
        if (f->type == FT_INT && units_stem_len(f->name) > 0)
            buf_printf(b, " --%.*s", (int)units_stem_len(f->name), flag);
        free(flag);
    }
}

/* One case per command word: "WORDS) verbs='...'; flags='...';;" in shell syntax. */
static void shell_cases(struct buf *b, const char *indent)
{
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        buf_printf(b, "%s%s) verbs='%s'; flags='%s' ;;\n", indent, commands[i].name,
                   commands[i].verbs, commands[i].flags);
    for (size_t i = 0; i < model_n_resources; i++) {
        const struct resource_def *def = model_resources[i];
        const char *alias = args_resource_short(def);
        bool own = !find_command(def->name);
        bool aliased = strcmp(alias, def->name) != 0 && !find_command(alias);
        if (!own && !aliased)
            continue;
        buf_printf(b, "%s%s%s%s) verbs='", indent, own ? def->name : "", own && aliased ? "|" : "",
                   aliased ? alias : "");
        resource_words(b, def);
        buf_puts(b, "'; flags='");
        resource_flags(b, def);
        buf_puts(b, "' ;;\n");
    }
}

static void all_first_words(struct buf *b)
{
    const char *words[256];
    size_t n = first_words(words, ARRAY_SIZE(words));

    for (size_t i = 0; i < n; i++)
        buf_printf(b, "%s%s", i ? " " : "", words[i]);
}

static void completion_bash(struct buf *b)
{
    buf_puts(b, "# bash completion for gpuaas; load with: source <(gpuaas completion bash)\n"
                "_gpuaas() {\n"
                "  local cur=${COMP_WORDS[COMP_CWORD]} cmd='' i verbs='' flags=''\n"
                "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
                "    case ${COMP_WORDS[i]} in\n"
                "      --server|--token|-o|--output) ((i++)) ;;\n"
                "      -*) ;;\n"
                "      *) cmd=${COMP_WORDS[i]}; break ;;\n"
                "    esac\n"
                "  done\n"
                "  if [ -z \"$cmd\" ]; then\n"
                "    COMPREPLY=($(compgen -W \"");
    all_first_words(b);
    buf_printf(b,
               " %s\" -- \"$cur\")); return\n"
               "  fi\n"
               "  case $cmd in\n",
               global_flags);
    shell_cases(b, "    ");
    buf_printf(b,
               "  esac\n"
               "  if [[ $cur == -* ]] || [ \"$i\" -lt $((COMP_CWORD - 1)) ]; then\n"
               "    COMPREPLY=($(compgen -W \"$flags %s\" -- \"$cur\"))\n"
               "  else\n"
               "    COMPREPLY=($(compgen -W \"$verbs $flags\" -- \"$cur\"))\n"
               "  fi\n"
               "}\n"
               "complete -F _gpuaas gpuaas\n",
               global_flags);
}

static void completion_zsh(struct buf *b)
{
    buf_puts(b, "#compdef gpuaas\n"
                "# zsh completion for gpuaas; load with: source <(gpuaas completion zsh)\n"
                "_gpuaas() {\n"
                "  local cmd='' verbs='' flags='' i\n"
                "  for ((i = 2; i < CURRENT; i++)); do\n"
                "    case ${words[i]} in\n"
                "      --server|--token|-o|--output) ((i++)) ;;\n"
                "      -*) ;;\n"
                "      *) cmd=${words[i]}; break ;;\n"
                "    esac\n"
                "  done\n"
                "  if [[ -z $cmd ]]; then\n"
                "    compadd -- ");
    all_first_words(b);
    buf_printf(b,
               " %s; return\n"
               "  fi\n"
               "  case $cmd in\n",
               global_flags);
    shell_cases(b, "    ");
    buf_printf(b,
               "  esac\n"
               "  if [[ ${words[CURRENT]} == -* ]] || ((i < CURRENT - 1)); then\n"
               "    compadd -- ${=flags} %s\n"
               "  else\n"
               "    compadd -- ${=verbs} ${=flags}\n"
               "  fi\n"
               "}\n"
               "if [[ $funcstack[1] == _gpuaas ]]; then _gpuaas \"$@\"; else compdef _gpuaas "
               "gpuaas; fi\n",
               global_flags);
}

/* fish: one line per word, offered when the command line has no command word yet or has this one.
 */
static void fish_words(struct buf *b, const char *cond, const char *list, bool flags)
{
    char *copy = xstrdup(list), *save = NULL;

    for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        if (flags && strncmp(w, "--", 2) == 0)
            buf_printf(b, "complete -c gpuaas -n '%s' -l %s\n", cond, w + 2);
        else if (!flags)
            buf_printf(b, "complete -c gpuaas -n '%s' -f -a %s\n", cond, w);
    }
    free(copy);
}

static void completion_fish(struct buf *b)
{
    const char *words[256];
    size_t n = first_words(words, ARRAY_SIZE(words));
    struct buf list;

    buf_puts(b, "# fish completion for gpuaas; load with: gpuaas completion fish | source\n");
    for (size_t i = 0; i < n; i++)
        buf_printf(b, "complete -c gpuaas -n '__fish_use_subcommand' -f -a %s\n", words[i]);
    fish_words(b, "__fish_use_subcommand", global_flags, true);
    buf_init(&list, 1 << 20);
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
        char *cond = xasprintf("__fish_seen_subcommand_from %s", commands[i].name);
        fish_words(b, cond, commands[i].verbs, false);
        fish_words(b, cond, commands[i].flags, true);
        free(cond);
    }
    for (size_t i = 0; i < model_n_resources; i++) {
        const struct resource_def *def = model_resources[i];
        char *cond =
            xasprintf("__fish_seen_subcommand_from %s %s", def->name, args_resource_short(def));
        buf_reset(&list);
        resource_words(&list, def);
        fish_words(b, cond, list.data, false);
        buf_reset(&list);
        resource_flags(&list, def);
        fish_words(b, cond, list.data, true);
        free(cond);
    }
    buf_release(&list);
}

static int cmd_completion(int argc, char **argv)
{
    static const char *const shells[] = {"bash", "zsh", "fish", NULL};
    struct buf b;
    int rc;

    if (argc == 2 && cli_is_help(argv[1])) {
        printf("usage: gpuaas completion bash|zsh|fish\n\n"
               "Prints a completion script for the shell: commands, resources, their verbs\n"
               "and flags. Load it with\n"
               "  bash: source <(gpuaas completion bash)\n"
               "  zsh:  source <(gpuaas completion zsh)\n"
               "  fish: gpuaas completion fish | source\n");
        return CLI_OK;
    }
    if (argc != 2)
        return cli_usage_error("completion", "completion takes one shell: bash, zsh or fish");
    if ((rc = cli_check_enum("completion", "the shell", argv[1], shells)) != 0)
        return rc;
    buf_init(&b, 1 << 24);
    if (strcmp(argv[1], "bash") == 0)
        completion_bash(&b);
    else if (strcmp(argv[1], "zsh") == 0)
        completion_zsh(&b);
    else
        completion_fish(&b);
    rc = fwrite(b.data, 1, b.len, stdout) == b.len ? CLI_OK : CLI_ERROR;
    buf_release(&b);
    return rc;
}

/* ---- dispatch ---- */

static int unknown_command(const char *word)
{
    const char *words[256];
    size_t n = first_words(words, ARRAY_SIZE(words) - 1);
    const char *close;

    words[n] = NULL;
    close = cli_closest(word, words);
    if (close)
        return cli_usage_error(NULL, "unknown command or resource '%s'; did you mean '%s'?", word,
                               close);
    return cli_usage_error(NULL, "unknown command or resource '%s'", word);
}

int cli_main(int argc, char **argv)
{
    static char help_flag[] = "--help";
    char *help_argv[3] = {NULL, help_flag, NULL};
    const struct command *c;
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
    if ((c = find_command(argv[i])) != NULL)
        return c->fn(argc - i, argv + i);
    if (args_find_resource(argv[i]))
        return cmd_resource(argc - i, argv + i);
    return unknown_command(argv[i]);
}
