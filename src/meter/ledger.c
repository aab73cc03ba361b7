/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ledger.c: the canonical bytes of a usage record for the tamper-evident
 * ledger. Fixed layout, big-endian, versioned by a magic, so that the same
 * record gives the same bytes on every machine and in every release that
 * keeps the magic; the caller chains BLAKE2b over them (meter.h).
 */
#include "base/common.h"

#include "base/err.h"
#include "meter/meter.h"

static const uint8_t MAGIC[4] = {'G', 'U', 'R', '1'};

static uint8_t *put(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

static const uint8_t *get(const uint8_t *p, uint64_t *v, int bytes)
{
    uint64_t x = 0;
    for (int i = 0; i < bytes; i++)
        x = (x << 8) | *p++;
    *v = x;
    return p;
}

void meter_record_encode(const struct meter_record *rec, uint8_t out[METER_RECORD_BYTES])
{
    uint8_t *p = out;
    memcpy(p, MAGIC, 4);
    p += 4;
    p = put(p, (uint64_t)rec->id, 8);
    p = put(p, (uint64_t)rec->org_id, 8);
    p = put(p, (uint64_t)rec->project_id, 8);
    p = put(p, (uint64_t)rec->flavor_id, 8);
    p = put(p, (uint8_t)rec->cls, 1);
    p = put(p, (uint32_t)rec->replicas, 4);
    p = put(p, (uint32_t)rec->gpu_milli, 4);
    p = put(p, (uint64_t)rec->started_ms, 8);
    p = put(p, (uint64_t)rec->ended_ms, 8);
    assert(p == out + METER_RECORD_BYTES);
}

int meter_record_decode(const uint8_t in[METER_RECORD_BYTES], struct meter_record *ret)
{
    if (memcmp(in, MAGIC, 4) != 0)
        return ERR_INVALID;
    const uint8_t *p = in + 4;
    uint64_t v[9];
    static const int width[9] = {8, 8, 8, 8, 1, 4, 4, 8, 8};
    for (int i = 0; i < 9; i++)
        p = get(p, &v[i], width[i]);
    if (v[4] >= METER_N_CLASSES)
        return ERR_INVALID;
    *ret = (struct meter_record){
        .id = (int64_t)v[0],
        .org_id = (int64_t)v[1],
        .project_id = (int64_t)v[2],
        .flavor_id = (int64_t)v[3],
        .cls = (int32_t)v[4],
        .replicas = (int32_t)(uint32_t)v[5],
        .gpu_milli = (int32_t)(uint32_t)v[6],
        .started_ms = (int64_t)v[7],
        .ended_ms = (int64_t)v[8],
    };
    return 0;
}
