/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common.h: the first include of every .c file in gpuaas. It pulls in the
 * C library headers nearly every file needs and then banned.h, so that the
 * banned calls fail to compile everywhere after it.
 */
#ifndef GPUAAS_COMMON_H
#define GPUAAS_COMMON_H

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#include "base/banned.h"

#endif
