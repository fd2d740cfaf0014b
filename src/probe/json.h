// Minimal JSON text helpers for the probe (no dependency beyond libc++ and
// the tools library's escaper).
#ifndef TICKCLOCK_PROBE_JSON_H
#define TICKCLOCK_PROBE_JSON_H

#include <string>

#include "json_text.h"

namespace tickclock_probe {

// s as a JSON string, quotes included (src/tools/json_text.h escapes).
inline std::string json_str(const std::string &s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    char e[6];
    o.append(e, tkt_json_char(c, e));
  }
  return o + "\"";
}

inline std::string json_u(unsigned long long v) { return std::to_string(v); }
inline std::string json_b(int v) { return v ? "true" : "false"; }

}  // namespace tickclock_probe

#endif
