/* tickclock internals — bounded string helpers (names.c). Every reason
 * the library writes goes through them; they always NUL-terminate. */
#ifndef TICKCLOCK_TEXT_H
#define TICKCLOCK_TEXT_H

#include "sys.h"
#include "tickclock.h"

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The source names (tickclock_source_name) as "auto, system, ...": the
 * one list error messages and the probe's usage print. */
TKC_INTERNAL void tkc_source_name_list(char *dst, size_t n);

/* Bounded string copy/format helpers (always NUL-terminate). */
TKC_INTERNAL void tkc_strlcpy(char *dst, const char *src, size_t n);
/* src with backslash, control and non-ASCII bytes escaped (\\ \n \r \t \xHH):
 * user-supplied text printed as one inert line. */
TKC_INTERNAL void tkc_escape(char *dst, size_t n, const char *src);
/* printf's subset, formatted by the library itself (names.c):
 * async-signal-safe, no allocation, no locale. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
TKC_INTERNAL void
tkc_fmt(char *dst, size_t n, const char *fmt, ...);

TKC_INTERNAL void tkc_vfmt(char *dst, size_t n, const char *fmt, va_list ap);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_TEXT_H */
