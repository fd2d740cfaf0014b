/* tickclock tools — text as a JSON string value: the one escaper that
 * tickclock-probe (src/probe/json.h), the matrix's info program
 * (ci/matrix_lab/info_main.c) and the guest lab's event program
 * (tests/guest/life_events.c) share. Header only, plain C in the common
 * subset of C99 and C++11, no dependency beyond the language: those
 * programs include it by its path relative to themselves, whatever
 * tickclock header (the core's or the single header) they are built with.
 *
 * Quote and backslash are escaped, \n \r \t by name, every other control
 * byte and every byte >= 0x7f as \u00XX: the output is printable ASCII
 * and valid JSON whatever the input (a brand string from CPUID, a file
 * name, a kernel's text). */
#ifndef TICKCLOCK_TOOLS_JSON_TEXT_H
#define TICKCLOCK_TOOLS_JSON_TEXT_H

/* MSVC's C compiler spells it __inline */
#if defined(_MSC_VER) && !defined(__cplusplus)
#define TKT_JSON_INLINE static __inline
#else
#define TKT_JSON_INLINE static inline
#endif

/* The JSON form of byte c inside a string value into out (1 to 6
 * characters, not terminated); returns how many. */
TKT_JSON_INLINE unsigned tkt_json_char(unsigned char c, char out[6]) {
  static const char hex[] = "0123456789abcdef";
  out[0] = '\\';
  switch (c) {
    case '"':
      out[1] = '"';
      return 2;
    case '\\':
      out[1] = '\\';
      return 2;
    case '\n':
      out[1] = 'n';
      return 2;
    case '\r':
      out[1] = 'r';
      return 2;
    case '\t':
      out[1] = 't';
      return 2;
    default:
      break;
  }
  if (c < 0x20 || c >= 0x7f) {
    out[1] = 'u';
    out[2] = '0';
    out[3] = '0';
    out[4] = hex[c >> 4];
    out[5] = hex[c & 15];
    return 6;
  }
  out[0] = (char)c;
  return 1;
}

#endif /* TICKCLOCK_TOOLS_JSON_TEXT_H */
