/* SPDX-License-Identifier: Apache-2.0 */
/*
 * work.h: the per-workload bookkeeping of the backends that run work
 * themselves (local.c, slurm*.c): their records in launch order, found by
 * workload id, and the ends seen that poll() has not handed out yet. A
 * record is the backend's own struct, whose first member is its int64_t
 * workload id (each backend checks that with a static assertion); the
 * table holds pointers and never frees a record: the backend does, with
 * whatever else it owns.
 */
#ifndef GPUAAS_BACKEND_WORK_H
#define GPUAAS_BACKEND_WORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* Zero-initialised is empty. */
struct backend_work {
    void **items; /* the records, in launch order */
    size_t n, cap;
    struct backend_ends done; /* ended, not yet handed out by poll() */
};

/* The record of workload id, its position in *ret_pos (may be NULL); NULL when none. */
void *backend_work_find(const struct backend_work *t, int64_t id, size_t *ret_pos);
/* Whether id has a record, or an end not yet handed out: a launch of it would conflict. */
bool backend_work_known(const struct backend_work *t, int64_t id);
/*
 * Before a launch: 0, or ERR_CONFLICT when workload id is known (backend_work_known), the
 * message saying it is "already running <where>" ("on this machine").
 */
int backend_work_check_free(const struct backend_work *t, int64_t id, const char *where,
                            struct error_info *ei);
/*
 * Before an adoption: l's shape (backend_check_launch), ERR_INVALID when it started after
 * now_ms, then as backend_work_check_free.
 */
int backend_work_check_adopt(const struct backend_work *t, const struct backend_launch *l,
                             int64_t started_ms, int64_t now_ms, const char *where,
                             struct error_info *ei);
/* Appends a record (the table keeps the pointer, the caller still owns it). */
void backend_work_add(struct backend_work *t, void *item);
/* Takes the record at pos out, the others keeping their order; returns it for the caller. */
void *backend_work_take(struct backend_work *t, size_t pos);
/* Frees the table and its ends, not the records (free them first). Empty afterwards. */
void backend_work_release(struct backend_work *t);

#endif
