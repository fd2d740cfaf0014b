/* ci/matrix_lab/info_main.c — prints what tickclock chose in this build, as one JSON
 * object on stdout, for the matrix report (ci/matrix): source, frequency
 * and how it was found, per-candidate read cost, the hot-path cost of
 * tickclock_now() measured here, and which compiler and language mode
 * built it (__VERSION__, __STDC_VERSION__ / __cplusplus), which proves the
 * cell really used the compiler it claims.
 *
 * Plain C99 / C++11 common subset, like the core: the matrix compiles it in
 * every language mode, against the core header and the single header. */
#include <inttypes.h>
#include <stdio.h>

#include "tickclock.h"
/* by its path from here: the one JSON escaper, whichever header this
 * build uses */
#include "../../src/tools/json_text.h"

static void json_str(const char *s) {
  putchar('"');
  for (; s != NULL && *s != '\0'; s++) {
    char e[6];
    fwrite(e, 1, tkt_json_char((unsigned char)*s, e), stdout);
  }
  putchar('"');
}

static const char *arch_name(void) {
#if defined(__x86_64__) || defined(_M_X64)
  return "x86_64";
#elif defined(__i386__) || defined(_M_IX86)
  return "i686";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__arm__)
  return "armv7";
#elif defined(__powerpc64__)
  return "ppc64le";
#elif defined(__s390x__)
  return "s390x";
#elif defined(__riscv)
  return "riscv64";
#elif defined(__mips__)
  return "mips64el";
#else
  return "unknown";
#endif
}

static const char *compiler_version(void) {
#if defined(__VERSION__)
  return __VERSION__;
#else
  return "unknown";
#endif
}

static long language_version(void) {
#if defined(__cplusplus)
  return (long)__cplusplus;
#elif defined(__STDC_VERSION__)
  return (long)__STDC_VERSION__;
#else
  return 0L;
#endif
}

/* Cost of one tickclock_now() in this build (after initialisation). A
 * number for the report, not a test: nothing here depends on it. */
static double now_read_ns(void) {
  const long n = 200000L; /* not an enum: C++20 deprecates enum/double arithmetic */
  uint64_t t0, t1, sink = 0;
  int64_t d;
  long i;
  t0 = tickclock_now_ordered();
  for (i = 0; i < n; i++) sink += tickclock_now();
  t1 = tickclock_now_ordered();
  d = tickclock_delta_ns(t0, t1);
  if (sink == 1) putchar(' '); /* keep the loop */
  return (double)d / (double)n;
}

int main(void) {
  const tickclock_info *in = tickclock_info_get();
  double cost = now_read_ns();
  unsigned k;

  printf("{\"source\": ");
  json_str(in->source_name);
  printf(", \"hz\": %.3f, \"hz_num\": %" PRIu64 ", \"hz_den\": %" PRIu64, in->hz, in->hz_num,
         in->hz_den);
  printf(", \"freq_method\": ");
  json_str(in->freq_method_name);
  printf(", \"uncertainty_ppm\": %.3f, \"resolution_ns\": %.3f", in->uncertainty_ppm,
         in->resolution_ns);
  printf(", \"forced\": %d, \"why\": ", in->forced);
  json_str(in->why);
  printf(", \"now_read_ns\": %.2f", cost);
  printf(", \"arch\": ");
  json_str(arch_name());
  printf(", \"compiler\": ");
  json_str(compiler_version());
  printf(", \"language\": \"%s\", \"language_version\": %ld",
#if defined(__cplusplus)
         "c++",
#else
         "c",
#endif
         language_version());
  printf(", \"candidates\": [");
  for (k = 0; k < in->n_candidates; k++) {
    const tickclock_candidate *c = &in->candidates[k];
    printf("%s{\"source\": ", k ? ", " : "");
    json_str(c->name);
    printf(", \"usable\": %d, \"chosen\": %d, \"read_ns\": %.2f, \"reason\": ", c->usable,
           c->chosen, c->read_ns);
    json_str(c->reason);
    putchar('}');
  }
  printf("]}\n");
  return 0;
}
