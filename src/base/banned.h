/* SPDX-License-Identifier: Apache-2.0 */
/*
 * banned.h: libc calls that are too easy to misuse. Included last by
 * base/common.h, so any use after it is a compile error. Use snprintf,
 * the buf API, parse_int64 and gmtime_r/localtime_r instead.
 */
#ifndef GPUAAS_BANNED_H
#define GPUAAS_BANNED_H

#define BANNED(func) sorry_##func##_is_banned_in_gpuaas

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef atol
#define atol(x) BANNED(atol)
#undef gmtime
#define gmtime(t) BANNED(gmtime)
#undef localtime
#define localtime(t) BANNED(localtime)
#undef gets
#define gets(x) BANNED(gets)

#endif
