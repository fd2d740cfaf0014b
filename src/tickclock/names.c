/* tickclock — names and text: the source and method names (one table
 * each, so error messages and the CLI list them from here), and the
 * bounded string helpers every reason is written with. Pure. */
#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>


static const char *const tkc_source_names[TICKCLOCK_SOURCE_COUNT_] = {
    "auto", "system", "tsc", "cntvct", "timebase", "tod", "rdtime", "qpc"};

static const char *const tkc_method_names[TICKCLOCK_FREQ_METHOD_COUNT_] = {
    "none",         "identity", "calibrated", "cpuid_15h", "cpuid_16h",
    "hypervisor",   "perf_page", "arch_register", "os", "config"};

const char *tickclock_source_name(int source) {
  if (source < 0 || source >= TICKCLOCK_SOURCE_COUNT_) return "unknown";
  return tkc_source_names[source];
}

const char *tickclock_freq_method_name(int method) {
  if (method < 0 || method >= TICKCLOCK_FREQ_METHOD_COUNT_) return "unknown";
  return tkc_method_names[method];
}

void tkc_source_name_list(char *dst, size_t n) {
  size_t o = 0;
  int i;
  if (n == 0) return;
  dst[0] = '\0';
  for (i = 0; i < TICKCLOCK_SOURCE_COUNT_; i++) {
    tkc_fmt(dst + o, n - o, "%s%s", i ? ", " : "", tkc_source_names[i]);
    o += strlen(dst + o);
    if (o + 1 >= n) return;
  }
}

int tickclock_source_from_name(const char *name) {
  int i;
  if (name == NULL) return -1;
  for (i = 0; i < TICKCLOCK_SOURCE_COUNT_; i++)
    if (strcmp(name, tkc_source_names[i]) == 0) return i;
  return -1;
}

/* snprintf that truncates silently: reasons are best-effort text. */
void tkc_fmt(char *dst, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dst, n, fmt, ap);
  va_end(ap);
}

void tkc_strlcpy(char *dst, const char *src, size_t n) {
  size_t len;
  if (n == 0) return;
  len = strlen(src);
  if (len >= n) len = n - 1;
  memcpy(dst, src, len);
  dst[len] = '\0';
}

/* Copies src as printable ASCII: backslash, control bytes and bytes
 * >= 0x7f become \\, \n, \r, \t or \xHH, so text that came from the user
 * (an environment variable, a file name) prints as one line and cannot
 * drive the terminal. Truncates between escapes, never inside one. */
void tkc_escape(char *dst, size_t n, const char *src) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  if (n == 0) return;
  for (; *src; src++) {
    unsigned char c = (unsigned char)*src;
    char e[4];
    size_t k = 0, j;
    if (c == '\\') { e[k++] = '\\'; e[k++] = '\\'; }
    else if (c == '\n') { e[k++] = '\\'; e[k++] = 'n'; }
    else if (c == '\r') { e[k++] = '\\'; e[k++] = 'r'; }
    else if (c == '\t') { e[k++] = '\\'; e[k++] = 't'; }
    else if (c < 0x20 || c >= 0x7f) {
      e[k++] = '\\'; e[k++] = 'x'; e[k++] = hex[c >> 4]; e[k++] = hex[c & 15];
    } else {
      e[k++] = (char)c;
    }
    if (o + k >= n) break;
    for (j = 0; j < k; j++) dst[o++] = e[j];
  }
  dst[o] = '\0';
}

