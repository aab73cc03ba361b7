/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_backend.h: a backend table for the engine's tests, with every
 * optional entry. Its world (what runs, what ended, what it was asked)
 * outlives the backends made over it, so that an engine stopped and
 * started again finds the same work, as it would in a real cluster. The
 * engine's thread calls the table; the test reads the world under its lock.
 */
#ifndef GPUAAS_TESTS_FAKE_BACKEND_H
#define GPUAAS_TESTS_FAKE_BACKEND_H

#include <pthread.h>

#include "backend/backend.h"

#define FAKE_MAX 64

struct fake_world {
    pthread_mutex_t lock;
    bool queue_ahead; /* backends made over it queue work ahead */
    /* Reports (ends, devices, starts) are held back: those made meanwhile come in one round. */
    bool paused;
    /* What runs (launched or adopted, its end not yet polled) and what waits behind what. */
    int64_t running[FAKE_MAX];
    size_t n_running;
    struct {
        int64_t id, after_id;
    } ahead[FAKE_MAX];
    size_t n_ahead;
    /* Ends for poll(), and work that ended while no engine ran (adopt reports it). */
    struct backend_event ends[FAKE_MAX];
    size_t n_ends;
    struct {
        int64_t id, at_ms;
    } gone[FAKE_MAX];
    size_t n_gone;
    struct backend_devices devs[8];
    size_t n_devs;
    struct backend_started started[8]; /* start reports for take_started */
    size_t n_started;
    /* What it was asked, in order: "launch 3", "adopt 3", "sweep", "stop 3", "after 4 3". */
    char calls[4 * FAKE_MAX][32];
    size_t n_calls;
    /* The launches, as given (devices' indices of replica 0). */
    struct {
        int64_t id;
        int32_t indices[8];
        size_t n_indices;
    } launched[FAKE_MAX];
    size_t n_launched;
    int opened; /* backends made */
    /* What discovery reports (complete: a node the store has and this lacks goes down). */
    struct {
        char name[32], state[8];
    } nodes[8];
    size_t n_nodes;
    unsigned nodes_gen, nodes_said; /* a report is due while they differ */
};

void fake_world_init(struct fake_world *w);
void fake_world_release(struct fake_world *w);
/* Plugs the world into the engine's backend settings (every cluster gets a fake). */
void fake_settings(struct backend_settings *s, struct fake_world *w);

/* Work id ends now as how says (its end polled by the engine). */
void fake_end(struct fake_world *w, int64_t id, enum backend_end how, int exit_code, int64_t at);
/* While no engine runs: work id ended at at_ms; the next adopt() of it reports that. */
void fake_gone(struct fake_world *w, int64_t id, int64_t at_ms);
/* A device report: id's replica on node got these indices. */
void fake_devices(struct fake_world *w, int64_t id, const char *node, const int32_t *idx, size_t n);
/* A start report: every replica of id runs since at_ms. */
void fake_started(struct fake_world *w, int64_t id, int64_t at_ms);
/* Holds reports back (true), or lets them come, all in the engine's next round (false). */
void fake_pause(struct fake_world *w, bool paused);
/* Discovery reports these nodes (names[i] in states[i], no GPUs) in the engine's next round. */
void fake_nodes(struct fake_world *w, const char *const *names, const char *const *states,
                size_t n);
/* Forgets the calls made so far. */
void fake_forget_calls(struct fake_world *w);
/* Position of a call in calls (-1 when never made). */
int fake_call(struct fake_world *w, const char *call);
/* How many calls start with prefix. */
int fake_count(struct fake_world *w, const char *prefix);

#endif
