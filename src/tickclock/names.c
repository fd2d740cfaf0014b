/* tickclock — names and text: the source and method names (one table
 * each, so error messages and the CLI list them from here), and the
 * bounded string helpers every reason is written with. Pure. */
#include "text.h"

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

static const char *const tkc_source_names[TICKCLOCK_SOURCE_COUNT_] = {
    "auto", "system", "tsc", "cntvct", "timebase", "tod", "rdtime", "qpc"};

static const char *const tkc_method_names[TICKCLOCK_FREQ_METHOD_COUNT_] = {
    "none",      "identity",      "calibrated", "cpuid_15h", "cpuid_16h", "hypervisor",
    "perf_page", "arch_register", "os",         "config",    "pvclock"};

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

/* ASCII case folded: "TSC", "Tsc" and "tsc" name the same source. */
static int tkc_same_name(const char *a, const char *b) {
  for (;; a++, b++) {
    char x = *a, y = *b;
    if (x >= 'A' && x <= 'Z') x = (char)(x - 'A' + 'a');
    if (x != y) return 0;
    if (x == '\0') return 1;
  }
}

int tickclock_source_from_name(const char *name) {
  int i;
  if (name == NULL) return -1;
  for (i = 0; i < TICKCLOCK_SOURCE_COUNT_; i++)
    if (tkc_same_name(name, tkc_source_names[i])) return i;
  return -1;
}

const char *tickclock_strerror(int rc) {
  switch (rc) {
    case TICKCLOCK_OK:
      return "success";
    case TICKCLOCK_SWITCHED:
      return "re-validation switched to the OS clock";
    case TICKCLOCK_EINVAL:
      return "invalid argument (nothing changed)";
    case TICKCLOCK_EUNAVAILABLE:
      return "the forced source is unusable here; the automatic choice was made";
    case TICKCLOCK_EBUSY:
      return "re-entered from a signal handler that interrupted the library (nothing changed)";
    case TICKCLOCK_ENOMEM:
      return "no memory for a new state (the current one is kept)";
    case TICKCLOCK_ELIMIT:
      return "the state history is full (TICKCLOCK_MAX_STATES); the current state is kept";
    default:
      return "unknown tickclock return code";
  }
}

/* The library's own formatter: the subset of printf its reasons use
 * (flags - + 0 space, a width, a precision, the length modifiers h l ll z,
 * and d i u x X c s f e %), written here so that formatting a reason is
 * async-signal-safe: no allocation, no locale, no lock, no libc stdio.
 * A refinement or a switch that falls due inside tickclock_to_ns or
 * tickclock_delta_ns, which a signal handler may call, formats its reason
 * with it. Truncates silently (always NUL-terminated); %f rounds half away
 * from zero and prints "inf"/"nan"; %e prints a two-digit exponent
 * at least. */
typedef struct tkc_fmt_out {
  char *dst;
  size_t n, o;
} tkc_fmt_out;

static void tkc_fmt_put(tkc_fmt_out *w, char c) {
  if (w->o + 1 < w->n) w->dst[w->o] = c;
  w->o++;
}

/* A field: sign/prefix, zero padding to width (when asked), the digits. */
static void tkc_fmt_field(tkc_fmt_out *w, const char *sign, const char *body, size_t len, int width,
                          int left, int zero) {
  size_t sl = strlen(sign), pad = 0, i;
  if (width > 0 && (size_t)width > sl + len) pad = (size_t)width - sl - len;
  if (!left && !zero)
    for (i = 0; i < pad; i++) tkc_fmt_put(w, ' ');
  for (i = 0; i < sl; i++) tkc_fmt_put(w, sign[i]);
  if (!left && zero)
    for (i = 0; i < pad; i++) tkc_fmt_put(w, '0');
  for (i = 0; i < len; i++) tkc_fmt_put(w, body[i]);
  if (left)
    for (i = 0; i < pad; i++) tkc_fmt_put(w, ' ');
}

/* v in base 10 or 16, at least min_digits digits, into the end of buf. */
static size_t tkc_fmt_digits(char *end, unsigned long long v, unsigned base, int upper,
                             int min_digits) {
  const char *d = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  size_t k = 0;
  do {
    *--end = d[v % base];
    v /= base;
    k++;
  } while (v != 0);
  while ((int)k < min_digits) {
    *--end = '0';
    k++;
  }
  return k;
}

/* |v| with prec decimals (prec <= 9) into buf; 0 when it does not fit a
 * 64-bit integer part (the caller prints it in %e form). */
static size_t tkc_fmt_fixed(char *buf, size_t cap, double v, int prec) {
  static const double p10[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
  unsigned long long ip, fp, scale = 1;
  double scaled;
  char tmp[48];
  size_t k = 0, o = 0, i;
  int j;
  if (prec > 9) prec = 9;
  if (v >= 1.8e19 / p10[prec]) return 0;
  for (j = 0; j < prec; j++) scale *= 10u;
  scaled = v * p10[prec] + 0.5;
  ip = (unsigned long long)scaled / scale;
  fp = (unsigned long long)scaled % scale;
  k = tkc_fmt_digits(tmp + sizeof tmp, ip, 10, 0, 1);
  for (i = 0; i < k && o < cap; i++) buf[o++] = tmp[sizeof tmp - k + i];
  if (prec > 0) {
    if (o < cap) buf[o++] = '.';
    k = tkc_fmt_digits(tmp + sizeof tmp, fp, 10, 0, prec);
    for (i = 0; i < k && o < cap; i++) buf[o++] = tmp[sizeof tmp - k + i];
  }
  return o;
}

/* |v| as d.ddde+XX with prec decimals (prec <= 9). */
static size_t tkc_fmt_expo(char *buf, size_t cap, double v, int prec) {
  int e = 0;
  size_t o;
  char tmp[8];
  size_t k, i;
  if (v != 0) {
    while (v >= 10.0) {
      v /= 10.0;
      e++;
    }
    while (v < 1.0) {
      v *= 10.0;
      e--;
    }
  }
  o = tkc_fmt_fixed(buf, cap, v, prec);
  if (o > 1 && buf[0] == '1' && buf[1] == '0') { /* rounded up to 10.xxx */
    o = tkc_fmt_fixed(buf, cap, v / 10.0, prec);
    e++;
  }
  if (o + 4 > cap) return o;
  buf[o++] = 'e';
  buf[o++] = e < 0 ? '-' : '+';
  k = tkc_fmt_digits(tmp + sizeof tmp, (unsigned long long)(e < 0 ? -e : e), 10, 0, 2);
  for (i = 0; i < k && o < cap; i++) buf[o++] = tmp[sizeof tmp - k + i];
  return o;
}

void tkc_vfmt(char *dst, size_t n, const char *fmt, va_list ap) {
  tkc_fmt_out w;
  w.dst = dst;
  w.n = n;
  w.o = 0;
  if (n == 0) return;
  while (*fmt) {
    int left = 0, plus = 0, space = 0, zero = 0, width = 0, prec = -1, lng = 0;
    char body[64];
    const char *sign = "";
    size_t len = 0;
    char c = *fmt++;
    if (c != '%') {
      tkc_fmt_put(&w, c);
      continue;
    }
    for (;; fmt++) {
      if (*fmt == '-')
        left = 1;
      else if (*fmt == '+')
        plus = 1;
      else if (*fmt == ' ')
        space = 1;
      else if (*fmt == '0')
        zero = 1;
      else
        break;
    }
    if (*fmt == '*') {
      width = va_arg(ap, int);
      fmt++;
    }
    while (*fmt >= '0' && *fmt <= '9') width = width * 10 + (*fmt++ - '0');
    if (*fmt == '.') {
      fmt++;
      prec = 0;
      if (*fmt == '*') {
        prec = va_arg(ap, int);
        fmt++;
      }
      while (*fmt >= '0' && *fmt <= '9') prec = prec * 10 + (*fmt++ - '0');
    }
    while (*fmt == 'h' || *fmt == 'l' || *fmt == 'z') {
      if (*fmt == 'l') lng++;
      if (*fmt == 'z') lng = 3;
      fmt++;
    }
    c = *fmt ? *fmt++ : '\0';
    switch (c) {
      case 'd':
      case 'i': {
        long long v = lng == 3   ? (long long)va_arg(ap, ptrdiff_t)
                      : lng == 2 ? va_arg(ap, long long)
                      : lng == 1 ? va_arg(ap, long)
                                 : va_arg(ap, int);
        unsigned long long m = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
        sign = v < 0 ? "-" : plus ? "+" : space ? " " : "";
        len = tkc_fmt_digits(body + sizeof body, m, 10, 0, prec < 0 ? 1 : prec);
        tkc_fmt_field(&w, sign, body + sizeof body - len, len, width, left, zero && prec < 0);
        break;
      }
      case 'u':
      case 'x':
      case 'X': {
        unsigned long long v = lng == 3   ? (unsigned long long)va_arg(ap, size_t)
                               : lng >= 2 ? va_arg(ap, unsigned long long)
                               : lng == 1 ? va_arg(ap, unsigned long)
                                          : va_arg(ap, unsigned);
        len = tkc_fmt_digits(body + sizeof body, v, c == 'u' ? 10u : 16u, c == 'X',
                             prec < 0 ? 1 : prec);
        tkc_fmt_field(&w, "", body + sizeof body - len, len, width, left, zero && prec < 0);
        break;
      }
      case 'c':
        body[0] = (char)va_arg(ap, int);
        tkc_fmt_field(&w, "", body, 1, width, left, 0);
        break;
      case 's': {
        const char *s = va_arg(ap, const char *);
        size_t k = 0;
        if (s == NULL) s = "(null)";
        while (s[k] && (prec < 0 || k < (size_t)prec)) k++;
        tkc_fmt_field(&w, "", s, k, width, left, 0);
        break;
      }
      case 'f':
      case 'e': {
        double v = va_arg(ap, double);
        if (prec < 0) prec = 6;
        sign = v < 0 ? "-" : plus ? "+" : space ? " " : "";
        if (v < 0) v = -v;
        if (v != v) {
          tkc_fmt_field(&w, "", "nan", 3, width, left, 0);
          break;
        }
        if (v > 1.7976931348623157e308) {
          tkc_fmt_field(&w, sign, "inf", 3, width, left, 0);
          break;
        }
        len = c == 'f' ? tkc_fmt_fixed(body, sizeof body, v, prec) : 0;
        if (len == 0) len = tkc_fmt_expo(body, sizeof body, v, prec);
        tkc_fmt_field(&w, sign, body, len, width, left, zero);
        break;
      }
      case '%':
        tkc_fmt_put(&w, '%');
        break;
      default: /* not in the subset: printed as written */
        tkc_fmt_put(&w, '%');
        if (c) tkc_fmt_put(&w, c);
        break;
    }
  }
  dst[w.o < n ? w.o : n - 1] = '\0';
}

void tkc_fmt(char *dst, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tkc_vfmt(dst, n, fmt, ap);
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
    if (c == '\\') {
      e[k++] = '\\';
      e[k++] = '\\';
    } else if (c == '\n') {
      e[k++] = '\\';
      e[k++] = 'n';
    } else if (c == '\r') {
      e[k++] = '\\';
      e[k++] = 'r';
    } else if (c == '\t') {
      e[k++] = '\\';
      e[k++] = 't';
    } else if (c < 0x20 || c >= 0x7f) {
      e[k++] = '\\';
      e[k++] = 'x';
      e[k++] = hex[c >> 4];
      e[k++] = hex[c & 15];
    } else {
      e[k++] = (char)c;
    }
    if (o + k >= n) break;
    for (j = 0; j < k; j++) dst[o++] = e[j];
  }
  dst[o] = '\0';
}
