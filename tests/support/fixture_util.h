// Test helpers: reading files, locating runfiles and the shared corpus.
#ifndef TICKCLOCK_TESTS_FIXTURE_UTIL_H
#define TICKCLOCK_TESTS_FIXTURE_UTIL_H

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "internal.h"
#include "tickclock_tools.h"

namespace tctest {

inline bool read_file(const std::string &path, std::string *out) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char buf[65536];
  size_t n;
  out->clear();
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
  std::fclose(f);
  return true;
}

inline bool is_dir(const std::string &p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Sorted *.cpuid files of a directory (full paths).
inline std::vector<std::string> list_cpuid(const std::string &dir) {
  std::vector<std::string> out;
  DIR *d = opendir(dir.c_str());
  if (!d) return out;
  while (struct dirent *e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 6 && n.compare(n.size() - 6, 6, ".cpuid") == 0) out.push_back(dir + "/" + n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// The runfiles directory of this workspace's files.
inline std::string runfiles_root() {
  const char *srcdir = std::getenv("TEST_SRCDIR");
  const char *ws = std::getenv("TEST_WORKSPACE");
  if (srcdir && ws) return std::string(srcdir) + "/" + ws;
  return ".";
}

struct Parsed {
  std::unique_ptr<tickclock_fixture> fx{new tickclock_fixture};
  std::string err;
  unsigned bad_line = 0;
};

inline Parsed parse_text(const std::string &text, const std::string &name) {
  Parsed p;
  char err[512];
  p.bad_line =
      tickclock_fixture_parse(text.data(), text.size(), name.c_str(), p.fx.get(), err, sizeof err);
  p.err = err;
  return p;
}

inline std::string meta(const tickclock_fixture *fx, const char *key) {
  const char *v = tickclock_fixture_meta_get(fx, key);
  return v ? v : "";
}

inline std::string hz_text(uint64_t num, uint64_t den) {
  char b[64];
  if (den == 1)
    std::snprintf(b, sizeof b, "%llu", (unsigned long long)num);
  else
    std::snprintf(b, sizeof b, "%llu/%llu", (unsigned long long)num, (unsigned long long)den);
  return b;
}

inline std::string rtrim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

// The claims as the gatherer lists them, for evidence a test built or
// edited by hand: the x86 decoder's claims from the facts, then the list.
inline void list_claims(tickclock_evidence *ev) {
  tickclock_x86_claims(&ev->x86);
  tkc_list_claims(ev);
}

// Decide, calibrating from nothing: a fixture without calibration_hz must
// not need one.
inline int decide_replay(const tickclock_evidence &ev, tickclock_info *info) {
  return tickclock_decide(&ev, info);
}

// Checks that make any decision well-formed; returns "" or what is wrong.
inline std::string malformed(const tickclock_info &in) {
  if (in.source != TICKCLOCK_SOURCE_SYSTEM && in.source != TICKCLOCK_SOURCE_TSC)
    return "source neither system nor tsc";
  if (in.source_name == nullptr || std::strcmp(in.source_name, tickclock_source_name(in.source)))
    return "source_name";
  if (in.why[0] == '\0') return "empty why";
  if (in.freq_detail == nullptr || in.freq_method_name == nullptr ||
      std::strcmp(in.freq_method_name, "unknown") == 0)
    return "frequency method missing";
  if (in.hz_num == 0 || in.hz_den == 0) return "zero frequency";
  if (in.conv.hz_num == 0) return "conversion not initialised";
  if (in.source == TICKCLOCK_SOURCE_TSC && (in.hz < 1e6 || in.hz > 1e11))
    return "tsc hz out of range";
  if (in.source == TICKCLOCK_SOURCE_SYSTEM && in.hz != 1e9) return "system hz != 1e9";
  int chosen = 0;
  for (unsigned i = 0; i < in.n_candidates; i++) {
    chosen += in.candidates[i].chosen;
    if (in.candidates[i].reason[0] == '\0') return "candidate without reason";
    if (in.candidates[i].chosen && in.candidates[i].source != in.source) return "chosen != source";
  }
  if (chosen != 1) return "not exactly one chosen candidate";
  if (in.n_freqs > TICKCLOCK_MAX_FREQS) return "too many freqs";
  int fchosen = 0;
  for (unsigned i = 0; i < in.n_freqs; i++) {
    const tickclock_freq_candidate &c = in.freqs[i];
    if (c.reason[0] == '\0' || c.name == nullptr) return "freq candidate without reason/name";
    if (c.chosen && !c.usable) return "chosen freq not usable";
    if (c.usable && !c.available) return "usable freq not available";
    if (c.available != (c.hz_num != 0)) return "available freq without a value";
    fchosen += c.chosen;
    if (c.chosen && (c.hz_num != in.hz_num || c.hz_den != in.hz_den)) return "chosen freq != hz";
  }
  if (in.source == TICKCLOCK_SOURCE_TSC && fchosen != 1) return "tsc without one chosen freq";
  if (in.source == TICKCLOCK_SOURCE_SYSTEM && fchosen != 0) return "system with a chosen freq";
  return "";
}

}  // namespace tctest

#endif
