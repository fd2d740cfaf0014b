/* tickclock tools — the core's window (tickclock_tools.h): each function
 * is the core's own, under the name the tools use. */
#include "tickclock_tools.h"

#include "calibrate.h"
#include "decide.h"
#include "freq.h"
#include "platform.h"
#include "text.h"

#if defined(TKC_ARCH_COUNTER)
uint64_t tkt_counter_read(void) { return tkc_arch_read(); }
uint64_t tkt_counter_read_ordered(void) { return tkc_arch_read_ordered(); }
#endif

void tkt_gather(tickclock_evidence *ev) {
  tkc_gather(NULL, ev);
  tkc_gather_rest(ev);
}

int tkt_decide(const tickclock_evidence *ev, tickclock_info *out) {
  return tickclock_decide(ev, out);
}

const tickclock_freq *tkt_pv_claim(const tickclock_evidence *ev) { return tkc_pv_claim_of(ev); }

int tkt_has_word(const char *list, const char *word) { return tkc_has_word(list, word); }

int tkt_counter_executable(const tickclock_evidence *ev, char *why, size_t n) {
  return tkc_counter_executable(ev, why, n);
}

int tkt_calibrate(uint64_t (*read_ordered)(void), uint32_t ms, uint64_t *hz_num, uint64_t *hz_den) {
  tickclock_calibration cal;
  if (!tkc_calibrate(read_ordered, ms, &cal)) return 0;
  *hz_num = cal.hz_num;
  *hz_den = cal.hz_den;
  return 1;
}

void tkt_tightest_bracket(uint64_t (*read_ordered)(void), uint64_t *counter_mid, uint64_t *raw_ns,
                          uint64_t *width) {
  tkc_bracket b = tkc_tightest_bracket(read_ordered);
  *counter_mid = b.mid;
  *raw_ns = b.ns;
  *width = b.width;
}

double tkt_measure_read_ns(uint64_t (*rd)(void)) { return tkc_measure_read_ns(rd); }
uint64_t tkt_os_read(void) { return tkc_os_read(); }
uint64_t tkt_os_now(void) { return tkc_os_now(); }
uint64_t tkt_os_now_raw(void) { return tkc_os_now_raw(); }
int tkt_read_line(const char *path, char *buf, size_t n) { return tkc_p_read_line(path, buf, n); }
void tkt_reduce(uint64_t *num, uint64_t *den) { tkc_reduce(num, den); }
double tkt_ppm(uint64_t a_num, uint64_t a_den, uint64_t b_num, uint64_t b_den) {
  return tkc_ppm(a_num, a_den, b_num, b_den);
}
void tkt_escape(char *dst, size_t n, const char *src) { tkc_escape(dst, n, src); }
