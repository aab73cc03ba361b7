/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of src/backend/cgroup.c: finding the hierarchies in mountinfo text
 * (hybrid v1 + v2, pure v2, co-mounted controllers, odd lines), settings it
 * refuses with a reason, and, where this process may manage the machine's
 * cgroups (root), a child made with the limits written in the files the
 * kernel reads, killed and removed. The backend-level tests (a process in
 * its cgroup, OOM, escaped processes) are in test_backend_local.c.
 */
#include "base/common.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "backend/cgroup.h"
#include "base/alloc.h"
#include "base/fdio.h"

/* This machine's kind: cgroup v1 cpu and memory beside a v2 mount without controllers. */
static const char hybrid[] =
    "24 1 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "30 24 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw\n"
    "32 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:11 - cgroup cgroup rw,cpu,cpuacct\n"
    "33 30 0:29 / /sys/fs/cgroup/cpuset rw,relatime shared:12 - cgroup cgroup rw,cpuset\n"
    "34 30 0:30 / /sys/fs/cgroup/memory rw,relatime shared:13 - cgroup cgroup rw,memory\n"
    "35 30 0:31 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n";

static const char pure_v2[] =
    "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/root rw\n"
    "26 25 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot";

static void test_find_mounts(void **state)
{
    char *v2, *cpu, *mem;
    (void)state;

    cgroup_find_mounts(hybrid, &v2, &cpu, &mem);
    assert_string_equal(v2, "/sys/fs/cgroup/unified");
    assert_string_equal(cpu, "/sys/fs/cgroup/cpu,cpuacct"); /* "cpuacct" alone is not cpu */
    assert_string_equal(mem, "/sys/fs/cgroup/memory");
    free(v2);
    free(cpu);
    free(mem);

    /* no newline at the end; no v1 at all */
    cgroup_find_mounts(pure_v2, &v2, &cpu, &mem);
    assert_string_equal(v2, "/sys/fs/cgroup");
    assert_null(cpu);
    assert_null(mem);
    free(v2);

    /* only cpuacct and cpuset: no cpu hierarchy; the pids one has no memory */
    cgroup_find_mounts("1 2 0:1 / /a rw - cgroup cgroup rw,cpuacct\n"
                       "1 2 0:1 / /b rw - cgroup cgroup rw,cpuset\n"
                       "1 2 0:1 / /c rw - cgroup cgroup rw,pids\n",
                       &v2, &cpu, &mem);
    assert_null(v2);
    assert_null(cpu);
    assert_null(mem);

    /* escaped mount points, truncated and empty lines, no dash: skipped, never guessed at */
    cgroup_find_mounts("1 2 0:1 / /with\\040space rw - cgroup2 cgroup2 rw\n"
                       "1 2 0:1 / /short\n"
                       "\n"
                       "1 2 0:1 / /nodash rw cgroup2 cgroup2 rw\n"
                       "1 2 0:1 / /memtype rw - cgroup\n"
                       "1 2 0:1 / relative rw - cgroup cgroup rw,memory\n"
                       "1 2 0:1 / /ok rw master:3 - cgroup cgroup rw,memory\n",
                       &v2, &cpu, &mem);
    assert_null(v2);
    assert_null(cpu);
    assert_string_equal(mem, "/ok"); /* an optional field before the dash */
    free(mem);

    cgroup_find_mounts("", &v2, &cpu, &mem);
    assert_null(v2);
}

static void test_refused_settings(void **state)
{
    struct cgroup_place p;
    char why[512], dir[] = "/tmp/gpuaas-cgroup-XXXXXX";
    (void)state;

    assert_int_equal(cgroup_place_open("", NULL, &p, why, sizeof(why)), -1);
    assert_int_equal(p.kind, CGROUP_NONE);
    assert_string_equal(why, "no cgroup root is set");
    assert_int_equal(cgroup_place_open(NULL, NULL, &p, why, sizeof(why)), -1);

    assert_int_equal(cgroup_place_open("/nonexistent/cgroup", NULL, &p, why, sizeof(why)), -1);
    assert_int_equal(p.kind, CGROUP_NONE);
    assert_non_null(strstr(why, "'/nonexistent/cgroup' is not a cgroup v2 directory"));

    /* a plain directory is not a cgroup, even a writable one */
    assert_non_null(mkdtemp(dir));
    assert_int_equal(cgroup_place_open(dir, NULL, &p, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "is not a cgroup v2 directory"));
    rmdir(dir);

    /* nothing made: making, killing and removing are no-ops that say so */
    errno = 0;
    assert_int_equal(cgroup_make(&p, "gpuaas-1-0", 1000, 64), -1);
    assert_int_equal(errno, ENOENT);
    cgroup_kill(&p, "gpuaas-1-0");
    assert_int_equal(cgroup_remove(&p, "gpuaas-1-0"), 0);
    cgroup_place_describe(&p, why, sizeof(why));
    assert_string_equal(why, "none");
}

/* The place "auto" finds here, or skips the test where there is none this process may use. */
static void open_auto_or_skip(struct cgroup_place *p, const char *mine)
{
    char why[700];
    if (geteuid() != 0) {
        print_message("skipped: managing the machine's cgroups needs root\n");
        skip();
    }
    if (cgroup_place_open("auto", mine, p, why, sizeof(why)) < 0) {
        print_message("skipped: %s\n", why);
        skip();
    }
}

static char *read_in(const char *dir, const char *name, const char *file)
{
    char *path = xasprintf("%s/%s/%s", dir, name, file), buf[256];
    ssize_t n = file_read_small(path, buf, sizeof(buf));
    free(path);
    assert_true(n > 0);
    buf[strcspn(buf, "\n")] = '\0';
    return xstrdup(buf);
}

static bool exists_in(const char *dir, const char *name)
{
    char *path = xasprintf("%s/%s", dir, name);
    struct stat st;
    bool there = stat(path, &st) == 0;
    free(path);
    return there;
}

static void assert_value(const char *dir, const char *name, const char *file, const char *want)
{
    char *got = read_in(dir, name, file);
    assert_string_equal(got, want);
    free(got);
}

/* Limits in the kernel's files; a process in it is killed; the child goes. */
static void test_make_kill_remove(void **state)
{
    struct cgroup_place p;
    char name[64], desc[700], joined;
    pid_t child;
    int status, ready[2];
    (void)state;

    open_auto_or_skip(&p, NULL);
    cgroup_place_describe(&p, desc, sizeof(desc));
    print_message("cgroups here: %s\n", desc);
    snprintf(name, sizeof(name), "gpuaas-test-%ld", (long)getpid());

    assert_int_equal(cgroup_make(&p, name, 1500, 48), 0);
    if (p.kind == CGROUP_V2) {
        assert_value(p.dir, name, "cpu.max", "150000 100000");
        assert_value(p.dir, name, "memory.max", "50331648");
    } else {
        assert_int_equal(p.kind, CGROUP_V1);
        assert_value(p.cpu_dir, name, "cpu.cfs_quota_us", "150000");
        assert_value(p.cpu_dir, name, "cpu.cfs_period_us", "100000");
        assert_value(p.mem_dir, name, "memory.limit_in_bytes", "50331648");
    }

    /* a process joins, as the work does before it execs, then says so */
    assert_int_equal(pipe(ready), 0);
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(ready[0]);
        if (cgroup_join(&p, name) < 0 || write(ready[1], "j", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    close(ready[1]);
    assert_int_equal(read(ready[0], &joined, 1), 1);
    close(ready[0]);
    /* busy while it is in there; kill empties it */
    assert_int_equal(cgroup_remove(&p, name), -1);
    assert_int_equal(errno, EBUSY);
    cgroup_kill(&p, name);
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    assert_int_equal(cgroup_remove(&p, name), 0);
    assert_false(exists_in(p.kind == CGROUP_V2 ? p.dir : p.mem_dir, name));
    assert_int_equal(cgroup_remove(&p, name), 0); /* gone already: fine */

    /* no limits: the kernel's "none" values */
    assert_int_equal(cgroup_make(&p, name, 0, 0), 0);
    if (p.kind == CGROUP_V2) {
        assert_value(p.dir, name, "cpu.max", "max 100000");
        assert_value(p.dir, name, "memory.max", "max");
    } else {
        assert_value(p.cpu_dir, name, "cpu.cfs_quota_us", "-1");
    }
    /* a name that is not a child here: nothing made */
    assert_int_equal(cgroup_make(&p, "no/such/parent", 1000, 64), -1);
    cgroup_place_close(&p);

    /* what a crash left, empty, goes when the place is opened again, by its owner only */
    open_auto_or_skip(&p, "gpuaas-other-");
    assert_true(exists_in(p.kind == CGROUP_V2 ? p.dir : p.mem_dir, name));
    cgroup_place_close(&p);
    open_auto_or_skip(&p, "gpuaas-test-");
    assert_false(exists_in(p.kind == CGROUP_V2 ? p.dir : p.mem_dir, name));
    cgroup_place_close(&p);
}

/* What the daemon asks a keeper for survives the trip; anything else is refused. */
static void test_request(void **state)
{
    struct cgroup_place v1 = {.kind = CGROUP_V1, .cpu_dir = "/c g/cpu", .mem_dir = "/m/mem"};
    struct cgroup_place v2 = {.kind = CGROUP_V2, .dir = "/sys/fs/cgroup/gpuaas"};
    struct cgroup_place none = {.kind = CGROUP_NONE};
    struct cgroup_request rq;
    char buf[256], small[16];
    (void)state;

    assert_true(cgroup_request_format(&v1, "gpuaas-1-2", 1500, 64, buf, sizeof(buf)) > 0);
    assert_int_equal(cgroup_request_parse(buf, &rq), 0);
    assert_int_equal(rq.place.kind, CGROUP_V1);
    assert_string_equal(rq.place.cpu_dir, "/c g/cpu");
    assert_string_equal(rq.place.mem_dir, "/m/mem");
    assert_string_equal(rq.name, "gpuaas-1-2");
    assert_int_equal(rq.cpu_milli, 1500);
    assert_int_equal(rq.mem_mib, 64);

    assert_true(cgroup_request_format(&v2, "g-3-0", 0, -1, buf, sizeof(buf)) > 0);
    assert_int_equal(cgroup_request_parse(buf, &rq), 0);
    assert_int_equal(rq.place.kind, CGROUP_V2);
    assert_string_equal(rq.place.dir, "/sys/fs/cgroup/gpuaas");
    assert_int_equal(rq.cpu_milli, 0);
    assert_int_equal(rq.mem_mib, -1);

    assert_int_equal(cgroup_request_format(&none, "g", 1, 1, buf, sizeof(buf)), -1);
    assert_int_equal(cgroup_request_format(&v2, "g-3-0", 1, 1, small, sizeof(small)), -1);

    static const char *const bad[] = {
        "",
        "2 1 1 g",             /* no directory */
        "2 1 1 g\n/a\n/b",     /* one too many */
        "1 1 1 g\n/a",         /* one too few */
        "3 1 1 g\n/a",         /* no such kind */
        "2 x 1 g\n/a",         /* not a number */
        "2 1 1 \n/a",          /* no name */
        "2 1 1 a b\n/a",       /* a name with a space */
        "2 1 1 ../../etc\n/a", /* a name that is a path */
        "2\n/a",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *text = xstrdup(bad[i]);
        if (cgroup_request_parse(text, &rq) == 0)
            fail_msg("accepted '%s'", bad[i]);
        free(text);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_mounts),
        cmocka_unit_test(test_refused_settings),
        cmocka_unit_test(test_make_kill_remove),
        cmocka_unit_test(test_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
