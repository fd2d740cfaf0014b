// Interposers for tests. With TCTEST_INTERPOSE_ALLOC defined before the
// include (in one file of the binary: it defines them), malloc, calloc and
// realloc are interposed, each call reported to tctest::g_alloc_hook while
// one is set (1 malloc, 2 calloc, 3 realloc), then passed to glibc's own
// allocator; not under a sanitizer, which owns the allocator:
// TCTEST_ALLOC_INTERPOSED is 0 there and a test skips, saying so.
// TCTEST_OPEN_MODE is the mode argument that open's callers pass with
// O_CREAT, for interposers of open.
#ifndef TICKCLOCK_TESTS_SUPPORT_INTERPOSE_H
#define TICKCLOCK_TESTS_SUPPORT_INTERPOSE_H

#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#include <atomic>

#include "tests/support/skip.h"

namespace tctest {
typedef void (*alloc_hook_fn)(int what);
inline std::atomic<alloc_hook_fn> g_alloc_hook(nullptr);  // set: calls are reported
}  // namespace tctest

#if defined(TCTEST_ASAN) || defined(TCTEST_TSAN) || !defined(TCTEST_INTERPOSE_ALLOC)
#define TCTEST_ALLOC_INTERPOSED 0
#else
#define TCTEST_ALLOC_INTERPOSED 1
extern "C" void *__libc_malloc(size_t);
extern "C" void *__libc_calloc(size_t, size_t);
extern "C" void *__libc_realloc(void *, size_t);
extern "C" void __libc_free(void *);

namespace tctest {
inline void alloc_seen(int what) {
  alloc_hook_fn h = g_alloc_hook.load(std::memory_order_relaxed);
  if (h != nullptr) h(what);
}
}  // namespace tctest

extern "C" void *malloc(size_t n) {
  tctest::alloc_seen(1);
  return __libc_malloc(n);
}
extern "C" void *calloc(size_t a, size_t b) {
  tctest::alloc_seen(2);
  return __libc_calloc(a, b);
}
extern "C" void *realloc(void *p, size_t n) {
  tctest::alloc_seen(3);
  return __libc_realloc(p, n);
}
extern "C" void free(void *p) { __libc_free(p); }
#endif

// Inside an interposer declared (const char *path, int flags, ...): mode_t
// mode, the third argument where flags ask for O_CREAT, else 0.
#define TCTEST_OPEN_MODE(flags, mode)  \
  mode_t mode = 0;                     \
  do {                                 \
    if ((flags) & O_CREAT) {           \
      va_list ap_;                     \
      va_start(ap_, flags);            \
      mode = (mode_t)va_arg(ap_, int); \
      va_end(ap_);                     \
    }                                  \
  } while (0)

#endif  // TICKCLOCK_TESTS_SUPPORT_INTERPOSE_H
