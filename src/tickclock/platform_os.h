/* tickclock internals — the POSIX headers and the kernel facts behind the
 * native platform (platform_posix.c, platform_pages.c): one place, so the
 * single header defines each macro once. */
#ifndef TICKCLOCK_PLATFORM_OS_H
#define TICKCLOCK_PLATFORM_OS_H

#if !defined(_WIN32)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__linux__)
#include <sys/prctl.h>
#include <sys/auxv.h>
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#if defined(TKC_X86) && defined(SYS_perf_event_open) && !defined(TICKCLOCK_NO_PERF)
#include <linux/perf_event.h>
#define TKC_HAVE_PERF 1
#endif
#if !defined(O_CLOEXEC) /* hidden in strict ISO C modes; the kernel's value */
#define O_CLOEXEC 02000000
#endif
#if defined(TKC_X86) && defined(SYS_clock_gettime)
#define TKC_HAVE_CLOCK_SYSCALL 1
#endif
#endif

#include <fcntl.h>
#include <sys/stat.h>
#if !defined(S_ISSOCK) /* hidden in strict ISO C modes; POSIX's file type bits */
#define S_ISSOCK(m) (((m) & 0170000) == 0140000)
#endif

#endif /* !_WIN32 */
#endif /* TICKCLOCK_PLATFORM_OS_H */
