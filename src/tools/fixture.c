/* tickclock tools — CPUID fixtures: a pure parser (shared by the probe and
 * the tests) and evidence replayed from one.
 *
 * Format (src/tickclock/README.md): one line per leaf, "LEAF SUBLEAF EAX EBX ECX EDX",
 * 8 hex digits each; blank lines; "#" comments, of which "# key: value"
 * (key: letters, digits, '_', '.', '-') are metadata.
 */
#include "fixture.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

static int tkc_fx_hex(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int tkc_fx_keychar(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

/* One data line [p, e): six fields of exactly 8 hex digits. */
static int tkc_fx_data(const char *p, const char *e, uint32_t v[6], const char **what) {
  int i, k;
  for (i = 0; i < 6; i++) {
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    if (p == e) {
      *what = "expected 6 fields 'LEAF SUBLEAF EAX EBX ECX EDX'";
      return 0;
    }
    v[i] = 0;
    for (k = 0; k < 8; k++, p++) {
      int h = p < e ? tkc_fx_hex((unsigned char)*p) : -1;
      if (h < 0) {
        *what = "each field must be exactly 8 hex digits";
        return 0;
      }
      v[i] = (v[i] << 4) | (uint32_t)h;
    }
    if (p < e && *p != ' ' && *p != '\t') {
      *what = "each field must be exactly 8 hex digits";
      return 0;
    }
  }
  while (p < e && (*p == ' ' || *p == '\t')) p++;
  if (p != e) {
    *what = "trailing text after 6 fields";
    return 0;
  }
  return 1;
}

unsigned tickclock_fixture_parse(const char *buf, size_t len, const char *name,
                                 tickclock_fixture *out, char *err, size_t errlen) {
  const char *p = buf, *end = buf + len;
  unsigned line = 0;
  const char *what = NULL;
  if (name == NULL) name = "<buffer>";
  out->n_leaves = 0;
  out->n_meta = 0;
  if (errlen) err[0] = '\0';
  while (p < end) {
    const char *nl = (const char *)memchr(p, '\n', (size_t)(end - p));
    const char *e = nl ? nl : end;
    const char *s = p;
    line++;
    if (e > s && e[-1] == '\r') e--;
    while (s < e && (*s == ' ' || *s == '\t')) s++;
    if (memchr(p, '\0', (size_t)(e - p)) != NULL) {
      what = "NUL byte in a text line";
      goto fail;
    }
    if (s == e) {
      /* blank */
    } else if (*s == '#') {
      const char *k = s + 1, *ke, *v;
      while (k < e && (*k == ' ' || *k == '\t')) k++;
      ke = k;
      while (ke < e && tkc_fx_keychar((unsigned char)*ke)) ke++;
      if (ke > k && ke < e && *ke == ':') {
        tickclock_fixture_meta *m;
        size_t kl = (size_t)(ke - k), vl;
        if (out->n_meta >= TICKCLOCK_FIXTURE_MAX_META) {
          what = "too many '# key: value' lines";
          goto fail;
        }
        if (kl >= sizeof out->meta[0].key) {
          what = "metadata key too long";
          goto fail;
        }
        v = ke + 1;
        while (v < e && (*v == ' ' || *v == '\t')) v++;
        vl = (size_t)(e - v);
        while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t')) vl--;
        if (vl >= sizeof out->meta[0].value) {
          what = "metadata value too long";
          goto fail;
        }
        m = &out->meta[out->n_meta++];
        memcpy(m->key, k, kl);
        m->key[kl] = '\0';
        memcpy(m->value, v, vl);
        m->value[vl] = '\0';
        m->line = line;
      }
    } else {
      uint32_t v[6];
      unsigned i;
      tickclock_fixture_leaf *l;
      if (!tkc_fx_data(s, e, v, &what)) goto fail;
      for (i = 0; i < out->n_leaves; i++)
        if (out->leaves[i].leaf == v[0] && out->leaves[i].subleaf == v[1]) {
          what = "duplicate LEAF SUBLEAF";
          goto fail;
        }
      if (out->n_leaves >= TICKCLOCK_FIXTURE_MAX_LEAVES) {
        what = "too many leaves";
        goto fail;
      }
      l = &out->leaves[out->n_leaves++];
      l->leaf = v[0];
      l->subleaf = v[1];
      l->r.eax = v[2];
      l->r.ebx = v[3];
      l->r.ecx = v[4];
      l->r.edx = v[5];
    }
    p = nl ? nl + 1 : end;
  }
  if (out->n_leaves == 0) {
    if (line == 0) line = 1;
    what = "no CPUID leaves";
    goto fail;
  }
  return 0;
fail:
  if (errlen) tkc_fmt(err, errlen, "%s:%u: %s", name, line, what);
  return line;
}

int tickclock_fixture_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, tickclock_cpuid_regs *out) {
  const tickclock_fixture *fx = (const tickclock_fixture *)ctx;
  unsigned i;
  memset(out, 0, sizeof *out);
  for (i = 0; i < fx->n_leaves; i++)
    if (fx->leaves[i].leaf == leaf && fx->leaves[i].subleaf == subleaf) {
      *out = fx->leaves[i].r;
      return 1;
    }
  /* leaf 0 must exist for the fixture to describe a CPU with CPUID */
  return leaf != 0;
}

const char *tickclock_fixture_meta_get(const tickclock_fixture *fx, const char *key) {
  unsigned i;
  for (i = 0; i < fx->n_meta; i++)
    if (strcmp(fx->meta[i].key, key) == 0) return fx->meta[i].value;
  return NULL;
}

/* "2100000000", "2100000000.5" (one decimal place kept exactly per digit),
 * or "NUM/DEN". Returns 0 if malformed. */
static int tkc_fx_rational(const char *s, uint64_t *num, uint64_t *den) {
  char *e;
  uint64_t n, d = 1;
  if (s == NULL || *s < '0' || *s > '9') return 0;
  n = strtoull(s, &e, 10);
  if (*e == '/') {
    if (e[1] < '0' || e[1] > '9') return 0;
    d = strtoull(e + 1, &e, 10);
  } else if (*e == '.') {
    e++;
    while (*e >= '0' && *e <= '9' && d < UINT64_C(1000000000)) {
      n = n * 10 + (uint64_t)(*e - '0');
      d *= 10;
      e++;
    }
  }
  if (*e != '\0' || d == 0 || n == 0) return 0;
  *num = n;
  *den = d;
  tkc_reduce(num, den);
  return 1;
}

void tickclock_fixture_evidence(const tickclock_fixture *fx, tickclock_evidence *ev) {
  const char *v;
  memset(ev, 0, sizeof *ev);
  ev->arch_counter = TICKCLOCK_SOURCE_TSC;
  tickclock_x86_decode(tickclock_fixture_cpuid, (void *)fx, &ev->x86);
  ev->tsc_prctl = TICKCLOCK_PRCTL_ENABLED;
  ev->os_resolution_ns = 1;
  v = tickclock_fixture_meta_get(fx, "clocksource");
  if (v != NULL && *v) {
    ev->os_linux = 1;
    ev->clocksource_known = 1;
    tkc_strlcpy(ev->clocksource, v, sizeof ev->clocksource);
  }
  v = tickclock_fixture_meta_get(fx, "available_clocksource");
  if (v != NULL && *v) {
    ev->available_known = 1;
    tkc_strlcpy(ev->available_clocksource, v, sizeof ev->available_clocksource);
  }
  v = tickclock_fixture_meta_get(fx, "read_ns.tsc");
  if (v != NULL) ev->counter_read_ns = strtod(v, NULL);
  v = tickclock_fixture_meta_get(fx, "read_ns.system");
  if (v != NULL) ev->os_read_ns = strtod(v, NULL);
  {
    const char *m = tickclock_fixture_meta_get(fx, "perf.time_mult");
    const char *s = tickclock_fixture_meta_get(fx, "perf.time_shift");
    if (m != NULL && s != NULL) {
      ev->perf.attempted = 1;
      ev->perf.ok = 1;
      ev->perf.version = 1;
      ev->perf.cap_user_time = 1;
      ev->perf.time_mult = (uint32_t)strtoul(m, NULL, 0);
      ev->perf.time_shift = (uint32_t)strtoul(s, NULL, 0);
    }
  }
  /* the paravirtual clock page as the probe read it */
  v = tickclock_fixture_meta_get(fx, "pvclock.mul");
  if (v != NULL) {
    const char *f;
    ev->pv.kind = TKC_PV_KVM;
    ev->pv.mul = (uint32_t)strtoul(v, NULL, 0);
    v = tickclock_fixture_meta_get(fx, "pvclock.shift");
    ev->pv.shift = (int8_t)(v ? strtol(v, NULL, 0) : 0);
    f = tickclock_fixture_meta_get(fx, "pvclock.flags");
    ev->pv.flags = (uint8_t)(f ? strtoul(f, NULL, 0) : 0);
    v = tickclock_fixture_meta_get(fx, "pvclock.version");
    ev->pv.version = (uint32_t)(v ? strtoul(v, NULL, 0) : 0);
    v = tickclock_fixture_meta_get(fx, "pvclock.tsc_timestamp");
    ev->pv.tsc_timestamp = v ? strtoull(v, NULL, 0) : 0;
    v = tickclock_fixture_meta_get(fx, "pvclock.system_time");
    ev->pv.system_time = v ? strtoull(v, NULL, 0) : 0;
  } else if ((v = tickclock_fixture_meta_get(fx, "pvclock.absent")) != NULL) {
    ev->pv.absent = strcmp(v, "unmapped") == 0  ? TKC_PV_ABSENT_UNMAPPED
                    : strcmp(v, "torn") == 0    ? TKC_PV_ABSENT_TORN
                    : strcmp(v, "no_maps") == 0 ? TKC_PV_ABSENT_NO_MAPS
                                                : TKC_PV_ABSENT_NO_MAPPING;
  }
  v = tickclock_fixture_meta_get(fx, "cpu_packages");
  if (v != NULL) ev->cpu_packages = (int)strtol(v, NULL, 10);
  v = tickclock_fixture_meta_get(fx, "warp_check");
  if (v != NULL && (strcmp(v, "pass") == 0 || strcmp(v, "fail") == 0)) {
    ev->warp_checked = 1;
    ev->warp_ok = strcmp(v, "pass") == 0;
  }
  v = tickclock_fixture_meta_get(fx, "warp_max_ns");
  if (v != NULL) ev->warp_max_ns = strtod(v, NULL);
  {
    uint64_t n, d;
    if (tkc_fx_rational(tickclock_fixture_meta_get(fx, "calibration_hz"), &n, &d)) {
      const char *u = tickclock_fixture_meta_get(fx, "calibration_ppm");
      ev->cal.ok = 1;
      ev->cal.hz_num = n;
      ev->cal.hz_den = d;
      ev->cal.hz = (double)n / (double)d;
      ev->cal.ns = UINT64_C(20000000);
      ev->cal.ticks = (uint64_t)(ev->cal.hz * 0.02);
      ev->cal.uncertainty_ppm = u ? strtod(u, NULL) : 1.0;
    }
  }
  tkc_list_claims(ev);
}
