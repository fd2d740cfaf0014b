// The vDSO's clock_gettime called directly (vdso.c): the symbol lookup on
// ELF images built here, whole and damaged (bad magic, a wrong class or
// machine, every truncation, offsets and counts out of range, a missing or
// wrong version), each placed against an unreadable page so that a read
// past its end would kill the test; then the live vDSO of this process,
// where there is one, against glibc's own lookup and libc's clock_gettime;
// and the OS clock's read path against clock_gettime (monotone, inside a
// bracket of two reads), on the vDSO while RDTSC is enabled and off it
// once the system call is in force.
#include <dlfcn.h>
#include <elf.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "internal.h"
#include "tests/support/child.h"
#include "tests/support/skip.h"

namespace {

uint64_t libc_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

}  // namespace

#if defined(TKC_HAVE_VDSO)

namespace {

// A vDSO-like image: one loadable segment (the whole image, executable),
// a dynamic section, a SysV or GNU hash table, three symbols (the null
// one, a data object with the wanted name, the wanted function), their
// names, and optionally versions (the base definition and LINUX_*).
struct Layout {
  bool gnu_hash = false;
  bool versions = true;
  const char *version = TKC_VDSO_VERSION;
};

// Offsets of the parts, for the damage the cases do.
struct Image {
  std::vector<unsigned char> b;
  size_t phoff, dyn, hash, symtab, strtab, versym, verdef, text;
  size_t dyn_symtab, dyn_strsz, dyn_hash, dyn_versym, dyn_verdef;  // entries' places
  uint64_t func_value;
};

template <class T>
void put(Image *im, size_t off, const T &v) {
  memcpy(im->b.data() + off, &v, sizeof v);
}

Image build(const Layout &l) {
  Image im;
  const size_t nsyms = 3;
  im.phoff = sizeof(Elf64_Ehdr);
  im.dyn = im.phoff + 2 * sizeof(Elf64_Phdr);
  const size_t ndyn = 10;
  im.hash = im.dyn + ndyn * sizeof(Elf64_Dyn);
  // SysV: nbucket, nchain, 1 bucket, 3 chains; GNU: 4 words, 1 bloom
  // word, 1 bucket, 2 chain words (symbols 1 and 2 hashed)
  size_t hash_len = l.gnu_hash ? 16 + 8 + 4 + 8 : 4 * (2 + 1 + nsyms);
  im.symtab = (im.hash + hash_len + 7) & ~size_t(7);
  im.strtab = im.symtab + nsyms * sizeof(Elf64_Sym);
  std::string strs =
      std::string("\0", 1) + TKC_VDSO_NAME + '\0' + "linux-vdso.so.1" + '\0' + l.version + '\0';
  const uint32_t name_at = 1, base_at = (uint32_t)(2 + strlen(TKC_VDSO_NAME)),
                 ver_at = base_at + 16;
  im.versym = (im.strtab + strs.size() + 7) & ~size_t(7);
  im.verdef = im.versym + 8;  // 3 halves, aligned
  size_t verdef_len = 2 * (sizeof(Elf64_Verdef) + sizeof(Elf64_Verdaux));
  im.text = (im.verdef + verdef_len + 15) & ~size_t(15);
  size_t size = im.text + 64;
  im.b.assign(size, 0);
  const uint64_t vaddr = 0x1000;  // addresses as linked; offsets = address - vaddr
  im.func_value = vaddr + im.text + 16;

  Elf64_Ehdr eh;
  memset(&eh, 0, sizeof eh);
  memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  {
    uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    if (first != 1) eh.e_ident[EI_DATA] = ELFDATA2MSB;
  }
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_machine = TKC_VDSO_MACHINE;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = im.phoff;
  eh.e_ehsize = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 2;
  put(&im, 0, eh);

  Elf64_Phdr load, dyn;
  memset(&load, 0, sizeof load);
  load.p_type = PT_LOAD;
  load.p_flags = PF_R | PF_X;
  load.p_offset = 0;
  load.p_vaddr = load.p_paddr = vaddr;
  load.p_filesz = load.p_memsz = size;
  put(&im, im.phoff, load);
  memset(&dyn, 0, sizeof dyn);
  dyn.p_type = PT_DYNAMIC;
  dyn.p_flags = PF_R;
  dyn.p_offset = im.dyn;
  dyn.p_vaddr = vaddr + im.dyn;
  dyn.p_filesz = ndyn * sizeof(Elf64_Dyn);
  put(&im, im.phoff + sizeof load, dyn);

  size_t k = 0;
  auto d = [&](int64_t tag, uint64_t v, size_t *where) {
    Elf64_Dyn e;
    e.d_tag = tag;
    e.d_un.d_val = v;
    if (where) *where = im.dyn + k * sizeof e;
    put(&im, im.dyn + k * sizeof e, e);
    k++;
  };
  d(l.gnu_hash ? DT_GNU_HASH : DT_HASH, vaddr + im.hash, &im.dyn_hash);
  d(DT_SYMTAB, vaddr + im.symtab, &im.dyn_symtab);
  d(DT_STRTAB, vaddr + im.strtab, nullptr);
  d(DT_STRSZ, strs.size(), &im.dyn_strsz);
  d(DT_SYMENT, sizeof(Elf64_Sym), nullptr);
  im.dyn_versym = im.dyn_verdef = 0;
  if (l.versions) {
    d(DT_VERSYM, vaddr + im.versym, &im.dyn_versym);
    d(DT_VERDEF, vaddr + im.verdef, &im.dyn_verdef);
    d(DT_VERDEFNUM, 2, nullptr);
  }
  d(DT_NULL, 0, nullptr);

  if (l.gnu_hash) {
    uint32_t w[4] = {1, 1, 1, 6};  // nbuckets, symoffset, bloom words, shift
    memcpy(im.b.data() + im.hash, w, sizeof w);
    uint64_t bloom = ~uint64_t(0);
    put(&im, im.hash + 16, bloom);
    uint32_t bucket = 1, chain[2] = {0x10u, 0x21u};  // symbol 2 ends the chain
    put(&im, im.hash + 24, bucket);
    memcpy(im.b.data() + im.hash + 28, chain, sizeof chain);
  } else {
    uint32_t w[6] = {1, (uint32_t)nsyms, 1, 0, 2, 0};
    memcpy(im.b.data() + im.hash, w, sizeof w);
  }

  Elf64_Sym s[3];
  memset(s, 0, sizeof s);
  s[1].st_name = name_at;  // the name, but an object: never taken
  s[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
  s[1].st_shndx = 5;
  s[1].st_value = vaddr + im.text;
  s[2].st_name = name_at;
  s[2].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
  s[2].st_shndx = 5;
  s[2].st_value = im.func_value;
  memcpy(im.b.data() + im.symtab, s, sizeof s);
  memcpy(im.b.data() + im.strtab, strs.data(), strs.size());

  uint16_t vs[3] = {0, 2, 2};
  memcpy(im.b.data() + im.versym, vs, sizeof vs);
  Elf64_Verdef vd[2];
  Elf64_Verdaux va[2];
  memset(vd, 0, sizeof vd);
  memset(va, 0, sizeof va);
  const size_t one = sizeof(Elf64_Verdef) + sizeof(Elf64_Verdaux);
  for (int i = 0; i < 2; i++) {
    vd[i].vd_version = VER_DEF_CURRENT;
    vd[i].vd_flags = i == 0 ? VER_FLG_BASE : 0;
    vd[i].vd_ndx = (Elf64_Half)(i + 1);
    vd[i].vd_cnt = 1;
    vd[i].vd_aux = sizeof(Elf64_Verdef);
    vd[i].vd_next = i == 0 ? (Elf64_Word)one : 0;
    va[i].vda_name = i == 0 ? base_at : ver_at;
    put(&im, im.verdef + i * one, vd[i]);
    put(&im, im.verdef + i * one + sizeof(Elf64_Verdef), va[i]);
  }
  return im;
}

// The image copied to the end of a readable page, the next page
// unreadable: a read past size bytes faults (and fails the test).
struct Guarded {
  unsigned char *map = nullptr;
  size_t len = 0;
  unsigned char *at = nullptr;
  Guarded(const unsigned char *p, size_t size) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (size + page - 1) / page + 1;
    len = pages * page;
    void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(m != MAP_FAILED);
    map = (unsigned char *)m;
    REQUIRE(mprotect(map + (pages - 1) * page, page, PROT_NONE) == 0);
    at = map + (pages - 1) * page - size;
    memcpy(at, p, size);
  }
  ~Guarded() { munmap(map, len); }
};

struct Result {
  uintptr_t addr;
  uintptr_t base;
  std::string why;
};

Result lookup(const Image &im, size_t size, const char *version = TKC_VDSO_VERSION) {
  Guarded g(im.b.data(), size);
  char why[160] = "";
  uintptr_t a = tkc_vdso_symbol(g.at, size, TKC_VDSO_NAME, version, why, sizeof why);
  return {a, (uintptr_t)g.at, why};
}

// Found, at the function's place in the image.
void expect_found(const Image &im) {
  Result r = lookup(im, im.b.size());
  INFO(r.why);
  REQUIRE(r.addr != 0);
  CHECK(r.addr - r.base == im.func_value - 0x1000);
}

void expect_refused(const Image &im, const char *why_part, size_t size = 0) {
  Result r = lookup(im, size ? size : im.b.size());
  INFO(r.why);
  CHECK(r.addr == 0);
  CHECK(r.why.find(why_part) != std::string::npos);
}

template <class T>
void set(Image *im, size_t off, T v) {
  put(im, off, v);
}

}  // namespace

TEST_CASE("the symbol is found in a whole image: SysV hash, GNU hash, versioned or not") {
  Layout l;
  expect_found(build(l));
  l.gnu_hash = true;
  expect_found(build(l));
  l.versions = false;
  expect_found(build(l));
  l.gnu_hash = false;
  expect_found(build(l));
}

TEST_CASE("a damaged header is refused") {
  Image im = build(Layout());
  Image bad = im;
  bad.b[1] = 'F';  // "\177FLF"
  expect_refused(bad, "not a 64-bit ELF");
  bad = im;
  bad.b[EI_CLASS] = ELFCLASS32;
  expect_refused(bad, "not a 64-bit ELF");
  bad = im;
  bad.b[EI_DATA] = bad.b[EI_DATA] == ELFDATA2LSB ? ELFDATA2MSB : ELFDATA2LSB;
  expect_refused(bad, "not a 64-bit ELF");
  bad = im;
  set<Elf64_Half>(&bad, offsetof(Elf64_Ehdr, e_machine), (Elf64_Half)(TKC_VDSO_MACHINE + 1));
  expect_refused(bad, "not a 64-bit ELF");
  bad = im;
  set<Elf64_Half>(&bad, offsetof(Elf64_Ehdr, e_type), (Elf64_Half)ET_EXEC);
  expect_refused(bad, "not a 64-bit ELF");
  bad = im;
  set<Elf64_Off>(&bad, offsetof(Elf64_Ehdr, e_phoff), (Elf64_Off)im.b.size() - 8);
  expect_refused(bad, "program headers lie outside");
  bad = im;
  set<Elf64_Off>(&bad, offsetof(Elf64_Ehdr, e_phoff), ~(Elf64_Off)0 - 8);  // wraps
  expect_refused(bad, "program headers lie outside");
  bad = im;
  set<Elf64_Half>(&bad, offsetof(Elf64_Ehdr, e_phnum), (Elf64_Half)60000);
  expect_refused(bad, "program headers lie outside");
}

TEST_CASE("every truncation of the image is refused, none read past its end") {
  Image im = build(Layout());
  for (size_t n = 0; n < im.b.size(); n++) {
    Result r = lookup(im, n);
    INFO("size " << n << ": " << r.why);
    CHECK(r.addr == 0);
  }
}

TEST_CASE("offsets and counts out of range are refused") {
  Image im = build(Layout());
  const uint64_t vaddr = 0x1000, size = im.b.size();
  Image bad = im;
  // the loadable segment longer than the image
  set<Elf64_Xword>(&bad, im.phoff + offsetof(Elf64_Phdr, p_filesz), size + 1);
  expect_refused(bad, "loadable segment lies outside");
  bad = im;
  set<Elf64_Off>(&bad, im.phoff + offsetof(Elf64_Phdr, p_offset), ~(Elf64_Off)0);
  expect_refused(bad, "loadable segment lies outside");
  bad = im;  // not executable
  set<Elf64_Word>(&bad, im.phoff + offsetof(Elf64_Phdr, p_flags), (Elf64_Word)PF_R);
  expect_refused(bad, "not executable");
  bad = im;  // the dynamic section past the segment
  set<Elf64_Xword>(&bad, im.phoff + sizeof(Elf64_Phdr) + offsetof(Elf64_Phdr, p_filesz), size);
  expect_refused(bad, "dynamic section lies outside");
  bad = im;  // a second loadable segment
  set<Elf64_Word>(&bad, im.phoff + sizeof(Elf64_Phdr), (Elf64_Word)PT_LOAD);
  expect_refused(bad, "2 loadable segments and 0 dynamic");
  bad = im;  // the symbol table past the segment
  set<Elf64_Addr>(&bad, im.dyn_symtab + offsetof(Elf64_Dyn, d_un), vaddr + size - 8);
  expect_refused(bad, "outside its loadable segment");
  bad = im;  // ... or below it
  set<Elf64_Addr>(&bad, im.dyn_symtab + offsetof(Elf64_Dyn, d_un), vaddr - 8);
  expect_refused(bad, "outside its loadable segment");
  bad = im;  // the string table's size past the segment
  set<Elf64_Xword>(&bad, im.dyn_strsz + offsetof(Elf64_Dyn, d_un), size);
  expect_refused(bad, "outside its loadable segment");
  bad = im;  // the string table's size too short for the name: not that name
  set<Elf64_Xword>(&bad, im.dyn_strsz + offsetof(Elf64_Dyn, d_un), (Elf64_Xword)4);
  expect_refused(bad, "defines no");
  bad = im;  // a symbol count far past the table
  set<uint32_t>(&bad, im.hash + 4, 4000u);
  expect_refused(bad, "outside its loadable segment");
  bad = im;
  set<uint32_t>(&bad, im.hash + 4, 0xffffffffu);
  expect_refused(bad, "no symbol count");
  bad = im;  // the hash table itself outside
  set<Elf64_Addr>(&bad, im.dyn_hash + offsetof(Elf64_Dyn, d_un), vaddr + size);
  expect_refused(bad, "no symbol count");
  bad = im;  // the function's address outside
  set<Elf64_Addr>(&bad, im.symtab + 2 * sizeof(Elf64_Sym) + offsetof(Elf64_Sym, st_value),
                  vaddr + size);
  expect_refused(bad, "lies outside its loadable segment");
  bad = im;  // the name's offset past the string table
  set<Elf64_Word>(&bad, im.symtab + 2 * sizeof(Elf64_Sym) + offsetof(Elf64_Sym, st_name),
                  (Elf64_Word)0x7fffffff);
  expect_refused(bad, "defines no");
  bad = im;  // an unterminated dynamic section
  for (size_t k = 0; k < 10; k++)
    set<Elf64_Sxword>(&bad, im.dyn + k * sizeof(Elf64_Dyn), (Elf64_Sxword)DT_DEBUG);
  expect_refused(bad, "not terminated");
  bad = im;  // the symbol undefined
  set<Elf64_Half>(&bad, im.symtab + 2 * sizeof(Elf64_Sym) + offsetof(Elf64_Sym, st_shndx),
                  (Elf64_Half)SHN_UNDEF);
  expect_refused(bad, "defines no");

  Layout gl;
  gl.gnu_hash = true;
  Image g = build(gl);
  bad = g;  // a bucket whose chain starts past the image
  set<uint32_t>(&bad, g.hash + 24, 1000u);
  expect_refused(bad, "no symbol count");
  bad = g;  // a chain that never ends: every word without the end bit
  set<uint32_t>(&bad, g.hash + 28 + 4, 0x20u);
  for (size_t k = g.hash + 36; k + 4 <= bad.b.size(); k += 4) set<uint32_t>(&bad, k, 0x40u);
  expect_refused(bad, "no symbol count");
  bad = g;  // a bucket below the unhashed symbols
  set<uint32_t>(&bad, g.hash + 4, 2u);
  set<uint32_t>(&bad, g.hash + 24, 1u);
  expect_refused(bad, "no symbol count");
  bad = g;  // bloom words past the image
  set<uint32_t>(&bad, g.hash + 8, 1000u);
  expect_refused(bad, "no symbol count");
}

TEST_CASE("a missing or different version is refused") {
  Image im = build(Layout());
  // asked for another version than the image defines
  Result r = lookup(im, im.b.size(), "LINUX_9.9");
  CHECK(r.addr == 0);
  CHECK(r.why.find("is not version LINUX_9.9") != std::string::npos);
  // the image's version named otherwise
  Layout other;
  other.version = "LINUX_2.5";
  expect_refused(build(other), "is not version");
  // the symbol's version index defined nowhere
  Image bad = im;
  set<uint16_t>(&bad, im.versym + 4, (uint16_t)3);
  expect_refused(bad, "is not version");
  // the base version (the file's own name) instead of LINUX_*
  bad = im;
  set<uint16_t>(&bad, im.versym + 4, (uint16_t)1);
  expect_refused(bad, "is not version");
  // version definitions absent while the symbols are versioned
  bad = im;
  set<Elf64_Sxword>(&bad, im.dyn_verdef, (Elf64_Sxword)DT_DEBUG);
  expect_refused(bad, "no version definitions");
  // the definition chain leaving the image
  const size_t one = sizeof(Elf64_Verdef) + sizeof(Elf64_Verdaux);
  bad = im;
  set<Elf64_Word>(&bad, im.verdef + offsetof(Elf64_Verdef, vd_next), (Elf64_Word)0x7ffffff0);
  expect_refused(bad, "is not version");
  bad = im;  // its name record outside
  set<Elf64_Word>(&bad, im.verdef + one + offsetof(Elf64_Verdef, vd_aux), (Elf64_Word)0x7ffffff0);
  expect_refused(bad, "is not version");
  bad = im;  // a definition of an unknown layout
  set<Elf64_Half>(&bad, im.verdef + offsetof(Elf64_Verdef, vd_version), (Elf64_Half)2);
  expect_refused(bad, "is not version");
  bad = im;  // the version's name past the string table
  set<Elf64_Word>(&bad, im.verdef + one + sizeof(Elf64_Verdef) + offsetof(Elf64_Verdaux, vda_name),
                  (Elf64_Word)0x7fffffff);
  expect_refused(bad, "is not version");
  // the version table past the segment
  bad = im;
  set<Elf64_Addr>(&bad, im.dyn_versym + offsetof(Elf64_Dyn, d_un), 0x1000 + im.b.size() - 2);
  expect_refused(bad, "outside its loadable segment");
}

// Every single byte changed, one at a time, to each of a few values: the
// lookup answers (found, where it was, or refused) and never reads past
// the image (the guard page).
TEST_CASE("single-byte damage anywhere: an answer inside the image or a refusal") {
  const unsigned char vals[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
  for (int g = 0; g < 2; g++) {
    Layout l;
    l.gnu_hash = g == 1;
    Image im = build(l);
    int found = 0, refused = 0;
    for (size_t i = 0; i < im.text; i++) {
      for (unsigned char v : vals) {
        if (im.b[i] == v) continue;
        Image bad = im;
        bad.b[i] = v;
        Result r = lookup(bad, bad.b.size());
        if (r.addr == 0) {
          refused++;
          continue;
        }
        found++;
        CHECK(r.addr >= r.base);
        CHECK(r.addr < r.base + bad.b.size());
      }
    }
    MESSAGE(std::string(g ? "GNU" : "SysV")
            << " hash: " << found << " found, " << refused << " refused");
    CHECK(refused > 0);
  }
}

TEST_CASE("this process's vDSO: the function glibc finds, reading libc's clock") {
  const void *base = (const void *)getauxval(AT_SYSINFO_EHDR);
  if (base == nullptr) {
    tctest::skip("the live vDSO lookup: no AT_SYSINFO_EHDR (no vDSO here, e.g. QEMU user mode)");
    return;
  }
  // the mapping's length from /proc/self/maps
  size_t len = 0;
  {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
      unsigned long lo = 0, hi = 0;
      if (line.find("[vdso]") != std::string::npos &&
          sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && lo == (unsigned long)base)
        len = hi - lo;
    }
  }
  REQUIRE(len > 0);
  char why[160] = "";
  uintptr_t a = tkc_vdso_symbol(base, len, TKC_VDSO_NAME, TKC_VDSO_VERSION, why, sizeof why);
  INFO(why);
  REQUIRE(a != 0);
  CHECK(a > (uintptr_t)base);
  CHECK(a < (uintptr_t)base + len);
  // glibc's own lookup of the same symbol, where it offers one
  void *h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h != nullptr) {
    void *g = dlvsym(h, TKC_VDSO_NAME, TKC_VDSO_VERSION);
    CHECK((uintptr_t)g == a);
    dlclose(h);
  } else {
    MESSAGE("glibc does not name the vDSO to dlopen here: its address not compared");
  }
  if (tkc_native_prctl_get_tsc() == TICKCLOCK_PRCTL_SIGSEGV) {
    tctest::skip("the live vDSO's reading: RDTSC is disabled in this process");
    return;
  }
  tkc_vdso_gettime_fn f = (tkc_vdso_gettime_fn)a;
  uint64_t last = 0;
  for (int k = 0; k < 10000; k++) {
    tkc_vdso_ts ts;
    uint64_t lo = libc_ns();
    REQUIRE(f(CLOCK_MONOTONIC, &ts) == 0);
    uint64_t hi = libc_ns();
    uint64_t v = (uint64_t)ts.sec * 1000000000u + (uint64_t)ts.nsec;
    REQUIRE(v >= lo);
    REQUIRE(v <= hi);
    REQUIRE(v >= last);
    last = v;
  }
}

#else

TEST_CASE("the vDSO's clock_gettime is not called directly on this target") {
  tctest::skip("the vDSO lookup: not built here (Linux on x86-64 and AArch64 only)");
}

#endif  // TKC_HAVE_VDSO

namespace {
// On the OS clock from the start: a tick maps to CLOCK_MONOTONIC's ns by
// the state's offset; every reading lies between the two of libc around
// it, and none precedes the one before.
void expect_os_reads_bracketed(int n) {
  const tickclock_info *i = tickclock_info_get();
  EXPECT(i->src_is_unit);
  uint64_t last = 0;
  for (int k = 0; k < n; k++) {
    uint64_t lo = libc_ns();
    uint64_t t = tickclock_now();
    uint64_t hi = libc_ns();
    EXPECT(t >= i->base_ticks);
    uint64_t ns = t - i->base_ticks + i->src_base;
    EXPECT(ns >= lo && ns <= hi);
    EXPECT(t >= last);
    last = t;
  }
}
}  // namespace

TEST_CASE("the OS clock's reads agree with clock_gettime, on the vDSO and off it") {
  tctest::check_clean(tctest::in_child(
      [] {
        tickclock_config sys = {TICKCLOCK_SOURCE_SYSTEM, 0, 0};
        EXPECT(tickclock_init(&sys) == TICKCLOCK_OK);
        const tickclock_info *i = tickclock_info_get();
        EXPECT(i->read_path == TICKCLOCK_READ_OS || i->read_path == TICKCLOCK_READ_OS_SYSCALL);
        fprintf(stderr, "system: %s\n", i->candidates[0].reason);
#if defined(TKC_HAVE_VDSO)
        // the reason names what the read path calls
        bool direct = strstr(i->candidates[0].reason, "called directly") != nullptr;
        EXPECT(direct == (TKC_LOAD_RELAXED(&tkc_g_os_vdso) != nullptr));
        if (i->read_path == TICKCLOCK_READ_OS_SYSCALL) EXPECT(!direct);
#endif
        expect_os_reads_bracketed(20000);
        // the system call in force: nothing calls the vDSO any more
        tkc_os_use_syscall(1);
#if defined(TKC_HAVE_VDSO)
        EXPECT(TKC_LOAD_RELAXED(&tkc_g_os_vdso) == nullptr);
#endif
        expect_os_reads_bracketed(2000);
      },
      60));
}
