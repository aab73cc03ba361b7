/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_replay.c: a main for a libFuzzer harness built without libFuzzer. It
 * runs LLVMFuzzerTestOneInput once on each file named on the command line
 * (a directory: each of its files, in name order), so the normal suite
 * replays the fuzz corpora in every build (and under the sanitizers in the
 * ASan build). Fails when it found no input,
 * so an emptied corpus cannot pass unnoticed.
 */
#include "base/common.h"

#include <dirent.h>
#include <sys/stat.h>

#include "base/alloc.h"

/* Optional in a harness, as with libFuzzer; fuzz_request_shutdown is fuzz_request.c's. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_request_shutdown(void) __attribute__((weak));

static size_t replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data = NULL;
    size_t len = 0, cap = 0, n;

    if (!f) {
        fprintf(stderr, "replay: could not open '%s': %s\n", path, strerror(errno));
        exit(1);
    }
    do {
        if (len + 4096 > cap) {
            cap = (len + 4096) * 2;
            data = xreallocarray(data, cap, 1);
        }
        n = fread(data + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    printf("replay: %s (%zu bytes)\n", path, len);
    fflush(stdout);
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    return 1;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static size_t replay_path(const char *path)
{
    struct dirent **names;
    struct stat st;
    size_t done = 0;
    int n;

    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return replay_file(path);
    n = scandir(path, &names, NULL, by_name);
    if (n < 0) {
        fprintf(stderr, "replay: could not read '%s': %s\n", path, strerror(errno));
        exit(1);
    }
    for (int i = 0; i < n; i++) {
        char child[4096];
        if (names[i]->d_name[0] != '.') {
            snprintf(child, sizeof(child), "%s/%s", path, names[i]->d_name);
            done += replay_path(child);
        }
        free(names[i]);
    }
    free(names);
    return done;
}

int main(int argc, char **argv)
{
    size_t done = 0;

    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++)
        done += replay_path(argv[i]);
    if (fuzz_request_shutdown)
        fuzz_request_shutdown();
    if (done == 0) {
        fprintf(stderr, "replay: no input found\n");
        return 1;
    }
    printf("replay: %zu inputs, none failed\n", done);
    return 0;
}
