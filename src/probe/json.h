// Minimal JSON text helpers for the probe (no dependency beyond libc++).
#ifndef TICKCLOCK_PROBE_JSON_H
#define TICKCLOCK_PROBE_JSON_H

#include <cstdio>
#include <string>

namespace tickclock_probe {

inline std::string json_str(const std::string &s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

inline std::string json_u(unsigned long long v) { return std::to_string(v); }
inline std::string json_b(int v) { return v ? "true" : "false"; }

}  // namespace tickclock_probe

#endif
