/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the slurm backend's pure part (src/backend/slurm.c): parsing what
 * `sinfo --json` (Slurm 22.05) says of nodes into gpuaas nodes and GPUs, and
 * what the narrow `squeue --Format` the backend polls with says of jobs. The
 * backend itself is tested against a real Slurm in tests/slurm.
 */
#include "base/common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "backend/slurm.h"

/* The sinfo parser on Slurm's shapes: typed and untyped GRES, several kinds, down nodes. */
static void test_parse_nodes(void **state)
{
    static const char json[] =
        "{\"nodes\":["
        "{\"name\":\"a\",\"state\":\"mixed\",\"state_flags\":[],\"cpus\":64,"
        "\"real_memory\":512000,\"gres\":\"gpu:a100:4(S:0),gpu:a100:4(S:1),shard:8\","
        "\"gres_used\":\"gpu:a100:3(IDX:0-2),shard:0\",\"reason\":\"\"},"
        "{\"name\":\"b\",\"state\":\"down\",\"state_flags\":[\"NOT_RESPONDING\"],\"cpus\":8,"
        "\"real_memory\":1000,\"gres\":\"gpu:2\",\"gres_used\":\"gpu:0\",\"reason\":\"gone\"},"
        "{\"name\":\"c\",\"state\":\"idle\",\"state_flags\":[\"DRAIN\"],\"cpus\":8,"
        "\"real_memory\":1000,\"gres\":\"\",\"gres_used\":\"\"},"
        "{\"state\":\"idle\"}]}";
    struct slurm_node *n = NULL;
    size_t count = 0;
    struct error_info ei = {0};
    (void)state;

    assert_int_equal(slurm_parse_nodes(json, strlen(json), &n, &count, &ei), 0);
    assert_int_equal(count, 3);
    assert_string_equal(n[0].state, "ready");
    assert_string_equal(n[0].gpu_type, "a100");
    assert_int_equal(n[0].n_gpus, 8);
    assert_int_equal(n[0].n_gpus_used, 3);
    assert_int_equal(n[0].cpu_milli, 64000);
    assert_string_equal(n[1].state, "down");
    assert_string_equal(n[1].gpu_type, "");
    assert_int_equal(n[1].n_gpus, 2);
    assert_string_equal(n[1].reason, "gone");
    assert_string_equal(n[2].state, "drain");
    assert_int_equal(n[2].n_gpus, 0);
    slurm_nodes_free(n, count);

    assert_int_equal(slurm_parse_nodes("{\"jobs\":[]}", 11, &n, &count, &ei), ERR_INVALID);
    assert_int_equal(slurm_parse_nodes("not json", 8, &n, &count, &ei), ERR_INVALID);
}

/* squeue's narrow format as Slurm 22.05 prints it (SLURM_TIME_FORMAT=%s). */
static void test_parse_queue(void **state)
{
    static const char out[] =
        "1501|FAILED|1796069476|1796069476|768|node7|gpuaas-12|\n"
        "1502|RUNNING|1796069476|NONE|0|node[1-2]|weird|name x|\n"
        "\n"
        "1503|PENDING|N/A|N/A|||gpuaas-14|\n"
        "1504_7|RUNNING|1796069476|NONE|0|node1|array task|\n"
        "1505+0|RUNNING|1796069476|NONE|0|node1|het job|\n"
        "1506|CANCELLED|Unknown|1796069477|N/A|node3|gpuaas-"
        "15123456789012345678901234567890123456789012345678901234567890123456789012345678901234"
        "567890123456789012345678901234567890123456789012345|"; /* no final newline */
    struct slurm_queue_job *j = NULL;
    struct error_info ei = {0};
    size_t n = 0;
    (void)state;

    assert_int_equal(slurm_parse_queue(out, strlen(out), &j, &n, &ei), 0);
    assert_int_equal(n, 4); /* the array task and the het job are skipped */
    assert_int_equal(j[0].job_id, 1501);
    assert_string_equal(j[0].state, "FAILED");
    assert_int_equal(j[0].start_s, 1796069476);
    assert_int_equal(j[0].end_s, 1796069476);
    assert_int_equal(j[0].exit_status, 768);
    assert_string_equal(j[0].nodes, "node7");
    assert_string_equal(j[0].name, "gpuaas-12");
    assert_string_equal(j[1].state, "RUNNING");
    assert_int_equal(j[1].end_s, 0);
    assert_string_equal(j[1].nodes, "node[1-2]");
    assert_string_equal(j[1].name, "weird|name x"); /* the name is last: a '|' in it is kept */
    assert_int_equal(j[2].job_id, 1503);
    assert_int_equal(j[2].start_s, 0);
    assert_int_equal(j[2].exit_status, -1);
    assert_string_equal(j[2].nodes, "");
    assert_int_equal(j[3].job_id, 1506);
    assert_int_equal(j[3].start_s, 0);
    assert_int_equal(j[3].end_s, 1796069477);
    assert_int_equal(j[3].exit_status, -1);
    assert_int_equal(strlen(j[3].name), sizeof(j[3].name) - 1); /* truncated */
    free(j);

    /* Nothing at all: no jobs. */
    j = (struct slurm_queue_job *)&ei; /* overwritten */
    assert_int_equal(slurm_parse_queue("", 0, &j, &n, &ei), 0);
    assert_int_equal(n, 0);
    assert_null(j);
    assert_int_equal(slurm_parse_queue(NULL, 0, &j, &n, &ei), 0);
    assert_int_equal(n, 0);
}

/* Anything else is refused as a whole: the poll then concludes nothing. */
static void test_parse_queue_malformed(void **state)
{
    static const char *const bad[] = {
        "1|RUNNING|1|NONE|0|node1|name\n",              /* no final '|' */
        "1|RUNNING|1|NONE|0|node1\n",                   /* a field short */
        "1|RUNNING|1|NONE|0|node1|",                    /* no name field at all */
        "x|RUNNING|1|NONE|0|node1|n|\n",                /* job id */
        "0|RUNNING|1|NONE|0|node1|n|\n",                /* job id 0 */
        "99999999999999999999|RUNNING|1|NONE|0|n|n|\n", /* too large */
        "|RUNNING|1|NONE|0|node1|n|\n",                 /* empty job id */
        "1||1|NONE|0|node1|n|\n",                       /* empty state */
        "1|running|1|NONE|0|node1|n|\n",                /* not Slurm's spelling */
        "1|RUN NING|1|NONE|0|node1|n|\n",
        "1|RUNNINGRUNNINGRUNNINGRUNNINGRUNNING|1|NONE|0|node1|n|\n", /* too long */
        "1|RUNNING|2026-11-30T20:09:48|NONE|0|node1|n|\n",           /* SLURM_TIME_FORMAT ignored */
        "1|RUNNING|-5|NONE|0|node1|n|\n",
        "1|RUNNING|1|later|0|node1|n|\n",
        "1|RUNNING|1|NONE|3:0|node1|n|\n", /* exit code as sacct writes it */
        "1|RUNNING|1|NONE|-1|node1|n|\n",
        "1|COMPLETED|1|2|0|node1|gpuaas-1|\ngarbage\n", /* one bad line spoils the answer */
        "squeue: error: Invalid job format specification: exit_code\n",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct slurm_queue_job *j = NULL;
        struct error_info ei = {0};
        size_t n = 77;
        if (slurm_parse_queue(bad[i], strlen(bad[i]), &j, &n, &ei) != ERR_INVALID)
            fail_msg("accepted: %s", bad[i]);
        assert_non_null(strstr(ei.message, "malformed"));
        assert_null(j); /* untouched */
        assert_int_equal(n, 77);
    }
}

/* Where finished jobs are recorded, from `scontrol show config` as Slurm 22.05 prints it. */
static void test_parse_jobcomp_config(void **state)
{
    static const char config[] = "Configuration data as of 2026-11-30T22:45:11\n"
                                 "AccountingStorageType   = accounting_storage/none\n"
                                 "JobCompHost             = localhost\n"
                                 "JobCompLoc              = /tmp/gpuaas-slurm.kKwGmQ/jobcomp.txt\n"
                                 "JobCompPort             = 0\n"
                                 "JobCompType             = jobcomp/filetxt\n"
                                 "JobCompUser             = root\n"
                                 "JobContainerType        = job_container/none";
    char out[64], tiny[8];
    (void)state;

    assert_int_equal(slurm_parse_jobcomp_config(config, strlen(config), out, sizeof(out)), 1);
    assert_string_equal(out, "/tmp/gpuaas-slurm.kKwGmQ/jobcomp.txt");
    assert_int_equal(slurm_parse_jobcomp_config(config, strlen(config), tiny, sizeof(tiny)), -1);
    /* the type after the place, a last line without a newline */
    assert_int_equal(
        slurm_parse_jobcomp_config("JobCompLoc = /a/b\r\nJobCompType = jobcomp/filetxt",
                                   strlen("JobCompLoc = /a/b\r\nJobCompType = "
                                          "jobcomp/filetxt"),
                                   out, sizeof(out)),
        1);
    assert_string_equal(out, "/a/b");

    static const char *const none[] = {
        /* recorded elsewhere: the location is a database's, not a file */
        "JobCompLoc = slurm_jobcomp_db\nJobCompType = jobcomp/mysql\n",
        "JobCompLoc = /var/log/slurm_jobcomp.log\nJobCompType = jobcomp/none\n",
        "JobCompType = jobcomp/filetxt\n",                        /* no place */
        "JobCompType = jobcomp/filetxt\nJobCompLoc = relative\n", /* not a path */
        "JobCompType = jobcomp/filetxtx\nJobCompLoc = /a\n",
        "JobCompTypeX = jobcomp/filetxt\nJobCompLoc = /a\n",
        "",
    };
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        if (slurm_parse_jobcomp_config(none[i], strlen(none[i]), out, sizeof(out)) != 0)
            fail_msg("found a jobcomp file in '%s'", none[i]);
    }
}

/* sacct's answer as Slurm 22.05 prints it (SLURM_TIME_FORMAT=%s, and its default local time). */
static void test_parse_sacct(void **state)
{
    /* The first two cut from a real run on the test cluster (slurm-up.sh, SLURM_WITH_DBD=1). */
    static const char text[] = "1|FAILED|1796081663|1796081663|3:0|gpuaas-x\n"
                               "2|CANCELLED by 0|1796081671|1796081672|0:0|gpuaas-y\n"
                               "3|COMPLETED|2026-01-02T03:04:05|2026-01-02T03:04:09|0:0|a|b\n"
                               "\n"
                               "4_1|COMPLETED|1|2|0:0|array\n"
                               "4+0|COMPLETED|1|2|0:0|het\n"
                               "4.batch|COMPLETED|1|2|0:0|batch\n"
                               "5|TIMEOUT|1796081663|1796081965|0:15|slow\n"
                               "6|PENDING|Unknown|Unknown|0:0|\n"
                               "7|CANCELLED|None|1796081672|0:0|never";
    struct slurm_acct_job *j = NULL;
    struct error_info ei = {0};
    struct tm tm = {.tm_year = 126,
                    .tm_mon = 0,
                    .tm_mday = 2,
                    .tm_hour = 3,
                    .tm_min = 4,
                    .tm_sec = 9,
                    .tm_isdst = -1};
    size_t n = 0;
    (void)state;

    if (slurm_parse_sacct(text, strlen(text), &j, &n, &ei) < 0)
        fail_msg("slurm_parse_sacct: %s", ei.message);
    assert_int_equal(n, 6);
    assert_int_equal(j[0].job_id, 1);
    assert_string_equal(j[0].state, "FAILED");
    assert_int_equal(j[0].start_s, 1796081663);
    assert_int_equal(j[0].end_s, 1796081663);
    assert_int_equal(j[0].exit_code, 3);
    assert_int_equal(j[0].signal, 0);
    assert_string_equal(j[0].name, "gpuaas-x");
    assert_string_equal(j[1].state, "CANCELLED"); /* "by 0" dropped */
    assert_int_equal(j[1].end_s, 1796081672);
    assert_string_equal(j[1].name, "gpuaas-y");
    /* local time, as sacct prints it without SLURM_TIME_FORMAT; a '|' in the name kept */
    assert_int_equal(j[2].job_id, 3);
    assert_int_equal(j[2].end_s, (int64_t)mktime(&tm));
    assert_int_equal(j[2].end_s - j[2].start_s, 4);
    assert_string_equal(j[2].name, "a|b");
    assert_int_equal(j[3].job_id, 5);
    assert_string_equal(j[3].state, "TIMEOUT");
    assert_int_equal(j[3].signal, 15);
    assert_int_equal(j[4].job_id, 6);
    assert_int_equal(j[4].start_s, 0);
    assert_int_equal(j[4].end_s, 0);
    assert_string_equal(j[4].name, "");
    assert_int_equal(j[5].start_s, 0);
    free(j);

    /* nothing */
    j = (struct slurm_acct_job *)&n;
    assert_int_equal(slurm_parse_sacct("", 0, &j, &n, NULL), 0);
    assert_null(j);
    assert_int_equal(n, 0);
}

static void test_parse_sacct_malformed(void **state)
{
    static const char *const bad[] = {
        "1|FAILED|1|2|3:0",         /* five fields */
        "1|FAILED|1|2",             /* four */
        "x|FAILED|1|2|3:0|n",       /* not a job id */
        "|FAILED|1|2|3:0|n",        /* none */
        "0|FAILED|1|2|3:0|n",       /* zero */
        "_4|FAILED|1|2|3:0|n",      /* not an array job's */
        "1|failed|1|2|3:0|n",       /* not upper-case */
        "1||1|2|3:0|n",             /* no state */
        "1|CANCELLED by|1|2|0:0|n", /* by whom? */
        "1|CANCELLED,x|1|2|0:0|n",  /* not a word */
        "1|COMPLETED|soon|2|0:0|n", /* not a time */
        "1|COMPLETED|1|2026-13-45T99:00:00|0:0|n",
        "1|COMPLETED|1|2026-01-02 03:04:05|0:0|n",
        "1|COMPLETED|1|2|0|n",     /* no signal */
        "1|COMPLETED|1|2|256:0|n", /* code out of range */
        "1|COMPLETED|1|2|0:128|n", /* signal out of range */
        "1|COMPLETED|1|2|:|n",
        "1|COMPLETED|1|2||n",
        "1|COMPLETED|1|2|-1:0|n",
        "2|COMPLETED|1|2|0:0|fine\n1|COMPLETED|1|2|0:x|n", /* the second line */
    };
    (void)state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct slurm_acct_job *j = NULL;
        struct error_info ei = {0};
        size_t n = 77;
        if (slurm_parse_sacct(bad[i], strlen(bad[i]), &j, &n, &ei) != ERR_INVALID)
            fail_msg("accepted: %s", bad[i]);
        assert_non_null(strstr(ei.message, "malformed"));
        assert_null(j); /* untouched */
        assert_int_equal(n, 77);
    }
}

/* Whether the cluster keeps accounting in slurmdbd, from `scontrol show config` (22.05). */
static void test_parse_accounting_config(void **state)
{
    static const char dbd[] = "Configuration data as of 2026-11-30T23:34:20\n"
                              "AccountingStorageBackupHost = (null)\n"
                              "AccountingStorageEnforce = none\n"
                              "AccountingStorageHost   = 127.0.0.1\n"
                              "AccountingStorageExternalHost = (null)\n"
                              "AccountingStorageParameters = (null)\n"
                              "AccountingStoragePort   = 11234\n"
                              "AccountingStorageTRES   = cpu,mem,energy,node,billing\n"
                              "AccountingStorageType   = accounting_storage/slurmdbd\n"
                              "AccountingStorageUser   = N/A\n"
                              "JobCompType             = jobcomp/none\n";
    static const char *const none[] = {
        "AccountingStorageType   = accounting_storage/none\n",
        "AccountingStorageType   = accounting_storage/slurmdbdx\n",
        "AccountingStorageTypeX  = accounting_storage/slurmdbd\n",
        "AccountingStorageHost   = accounting_storage/slurmdbd\n",
        "",
    };
    char out[64];
    (void)state;

    assert_int_equal(slurm_parse_accounting_config(dbd, strlen(dbd)), 1);
    assert_int_equal(slurm_parse_jobcomp_config(dbd, strlen(dbd), out, sizeof(out)), 0);
    assert_int_equal(slurm_parse_accounting_config("AccountingStorageType=accounting_storage/"
                                                   "slurmdbd\r",
                                                   strlen("AccountingStorageType=accounting_"
                                                          "storage/slurmdbd\r")),
                     1);
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        if (slurm_parse_accounting_config(none[i], strlen(none[i])) != 0)
            fail_msg("found slurmdbd in '%s'", none[i]);
    }
}

/* Checks one entry of a devices answer: node and indices (count, then the indices). */
static void expect_devices(const struct slurm_job_devices *d, const char *node, size_t n, ...)
{
    va_list ap;
    assert_string_equal(d->node, node);
    assert_int_equal(d->n_indices, n);
    va_start(ap, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(d->indices[i], va_arg(ap, int));
    va_end(ap);
}

/* scontrol's per-node groups as Slurm 22.05 prints them, one node and several. */
static void test_parse_job_devices(void **state)
{
    /* Cut from a real `scontrol --details --oneliner show job` (the foreign job of e2e). */
    static const char one[] =
        "JobId=1 JobName=wrap UserId=root(0) JobState=RUNNING Reason=None ReqNodeList=node1 "
        "NodeList=node1 BatchHost=node1 NumNodes=1 NumCPUs=1 TRES=cpu=1,mem=64G,node=1 "
        "JOB_GRES=gpu:h100:1   Nodes=node1 CPU_IDs=0 Mem=65536 GRES=gpu:h100:1(IDX:1) "
        "MinCPUsNode=1 Command=(null) WorkDir=/tmp Power= TresPerNode=gres:gpu:h100:1 \n";
    static const char multi[] =
        "JobId=7 JobState=RUNNING NodeList=node[1-2,5],gpu07 JOB_GRES=gpu:h100:6\n"
        "     Nodes=node[1-2,5] CPU_IDs=0-1 Mem=100 GRES=gpu:h100:3(IDX:0-1,3)\n"
        "     Nodes=gpu07 CPU_IDs=0 Mem=100 GRES=gpu:a100:1(IDX:5),gpu:h100:1(IDX:2),"
        "shard:h100:4(0/8)\n"
        "   MinCPUsNode=1";
    static const char padded[] =
        "Nodes=n[08-10]x CPU_IDs=0 Mem=0 GRES=gpu:2(IDX:7,6) Nodes=cpu1 CPU_IDs=0 Mem=0 "
        "Nodes=cpu2 CPU_IDs=0 Mem=0 GRES=(null) Nodes=n1 GRES=gpu:1(IDX:N/A)";
    struct slurm_job_devices *d = NULL;
    struct error_info ei = {0};
    size_t n = 0;
    (void)state;

    assert_int_equal(slurm_parse_job_devices(one, strlen(one), &d, &n, &ei), 0);
    assert_int_equal(n, 1);
    expect_devices(&d[0], "node1", 1, 1);
    assert_int_equal(d[0].workload_id, 0);
    free(d);

    assert_int_equal(slurm_parse_job_devices(multi, strlen(multi), &d, &n, &ei), 0);
    assert_int_equal(n, 4);
    expect_devices(&d[0], "node1", 3, 0, 1, 3);
    expect_devices(&d[1], "node2", 3, 0, 1, 3);
    expect_devices(&d[2], "node5", 3, 0, 1, 3);
    expect_devices(&d[3], "gpu07", 2, 2, 5);
    free(d);

    /* zero padding and a suffix kept; groups without GPUs left out */
    assert_int_equal(slurm_parse_job_devices(padded, strlen(padded), &d, &n, &ei), 0);
    assert_int_equal(n, 3);
    expect_devices(&d[0], "n08x", 2, 6, 7);
    expect_devices(&d[1], "n09x", 2, 6, 7);
    expect_devices(&d[2], "n10x", 2, 6, 7);
    free(d);

    /* a pending job (no groups), GRES before any group, nothing at all */
    static const char *const empty[] = {
        "JobId=2 JobState=PENDING NodeList= JOB_GRES=gpu:1 TresPerNode=gres:gpu:h100:2",
        "GRES=gpu:1(IDX:0) Nodes=node1 CPU_IDs=0",
        "",
    };
    for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
        d = NULL;
        assert_int_equal(slurm_parse_job_devices(empty[i], strlen(empty[i]), &d, &n, &ei), 0);
        assert_int_equal(n, 0);
        assert_null(d);
    }
    /* the length is respected: "IDX:1)" cut short is malformed, not read past */
    assert_int_equal(slurm_parse_job_devices(one,
                                             strlen("JobId=1 JobName=wrap UserId=root(0) "
                                                    "JobState=RUNNING"),
                                             &d, &n, &ei),
                     0);
    assert_int_equal(n, 0);
    free(d);
}

/* Malformed hostlists and index lists are refused, whole. */
static void test_parse_job_devices_malformed(void **state)
{
    static const char *const bad[] = {
        "Nodes=node[1-2 GRES=gpu:1(IDX:0)",      /* unclosed bracket */
        "Nodes=node1-2] GRES=gpu:1(IDX:0)",      /* closing only */
        "Nodes=a[1-2]b[3] GRES=gpu:1(IDX:0)",    /* two brackets */
        "Nodes=a[[1]] GRES=gpu:1(IDX:0)",        /* nested */
        "Nodes=node[2-1] GRES=gpu:1(IDX:0)",     /* range going down */
        "Nodes=node[] GRES=gpu:1(IDX:0)",        /* empty range */
        "Nodes=node[x] GRES=gpu:1(IDX:0)",       /* not a number */
        "Nodes=node[1-] GRES=gpu:1(IDX:0)",      /* half a range */
        "Nodes=node[0-99999] GRES=gpu:1(IDX:0)", /* too many nodes */
        "Nodes=a,,b GRES=gpu:1(IDX:0)",          /* empty name */
        "Nodes=node1 GRES=gpu:1(IDX:0",          /* unclosed parenthesis */
        "Nodes=node1 GRES=gpu:1(IDX:0))",        /* one too many */
        "Nodes=node1 GRES=gpu:1(IDX:)",          /* no index */
        "Nodes=node1 GRES=gpu:1(IDX:a)",         /* not a number */
        "Nodes=node1 GRES=gpu:1(IDX:3-1)",       /* going down */
        "Nodes=node1 GRES=gpu:1(IDX:0,,1)",      /* empty item */
        "Nodes=node1 GRES=gpu:1(IDX:-1)",        /* negative */
        "Nodes=node1 GRES=gpu:1(IDX:1024)",      /* above the highest index */
        "Nodes=node1 GRES=gpu:65(IDX:0-64)",     /* too many on one node */
        "Nodes=node1 GRES=gpu:1(IDX:99999999999999999999)",
        ("Nodes=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa GRES=gpu:1(IDX:0)"), /* name too long */
    };
    (void)state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct slurm_job_devices *d = NULL;
        struct error_info ei = {0};
        size_t n = 0;
        if (slurm_parse_job_devices(bad[i], strlen(bad[i]), &d, &n, &ei) != ERR_INVALID)
            fail_msg("'%s' was taken", bad[i]);
        assert_true(ei.message[0] != '\0');
        assert_null(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_nodes),
        cmocka_unit_test(test_parse_queue),
        cmocka_unit_test(test_parse_queue_malformed),
        cmocka_unit_test(test_parse_jobcomp_config),
        cmocka_unit_test(test_parse_sacct),
        cmocka_unit_test(test_parse_sacct_malformed),
        cmocka_unit_test(test_parse_accounting_config),
        cmocka_unit_test(test_parse_job_devices),
        cmocka_unit_test(test_parse_job_devices_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
