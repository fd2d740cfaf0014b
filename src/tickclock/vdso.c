/* tickclock — the kernel's clock_gettime in the vDSO, called directly
 * (Linux on x86-64 and AArch64).
 *
 * libc reaches the vDSO through its own wrapper; the OS clock's read path
 * calls the vDSO's function itself, found once at initialisation by
 * walking the image the kernel mapped (the auxiliary vector's
 * AT_SYSINFO_EHDR): its ELF header, its one loadable segment, its
 * dynamic section, its symbol, string, hash and version tables. Every
 * offset and count is checked against the image before it is read, every
 * read is a copy (no unaligned access), and any doubt leaves the read
 * with libc's clock_gettime, with the reason kept for the OS clock's
 * candidate. No allocation, no descriptor, no system call; the function
 * found is used only once its first reading lies between two of libc's.
 * The auxiliary vector gives the image's start, not its length: the
 * length is the loadable segment's, as the headers in the first page
 * state it (the kernel maps the image whole), up to TKC_VDSO_MAX_SPAN.
 */
#include "platform.h"

#if defined(TKC_HAVE_VDSO)

#include "platform_os.h"
#include "text.h"

#include <elf.h>

#if !defined(TICKCLOCK_STATIC)
TKC_SHARED tkc_vdso_gettime_fn tkc_g_os_vdso = NULL;
#endif

/* The most symbols, program headers and version definitions looked at:
 * the kernel's vDSO has a few dozen of the first, a handful of the rest. */
#define TKC_VDSO_MAX_SYMS 4096u
#define TKC_VDSO_MAX_PHDRS 64u
#define TKC_VDSO_MAX_VERDEFS 64u
/* The first page: where the ELF header and its program headers must lie
 * in the live image (the smallest page Linux maps; the rest of the
 * mapping's length is the loadable segment's, as the image states it). */
#define TKC_VDSO_HEAD 4096u
/* The most a vDSO image may span (the kernel's are two to four pages). */
#define TKC_VDSO_MAX_SPAN (1u << 20)

typedef struct tkc_vdso_img {
  const unsigned char *img;
  uint64_t size;                           /* bytes readable from img */
  uint64_t load_vaddr, load_off, load_len; /* the loadable segment */
  int load_exec;
} tkc_vdso_img;

/* len bytes at image offset off into dst; 0 if they are not all inside. */
static int tkc_vdso_get(const tkc_vdso_img *m, uint64_t off, void *dst, size_t len) {
  if (off > m->size || (uint64_t)len > m->size - off) return 0;
  memcpy(dst, m->img + off, len);
  return 1;
}

/* The image offset of [v, v + len) (addresses as the image states them):
 * 0 unless it lies inside the loadable segment. */
static int tkc_vdso_at(const tkc_vdso_img *m, uint64_t v, uint64_t len, uint64_t *off) {
  uint64_t rel;
  if (v < m->load_vaddr) return 0;
  rel = v - m->load_vaddr;
  if (rel > m->load_len || len > m->load_len - rel) return 0;
  *off = m->load_off + rel;
  return 1;
}

/* n items of size each at address v, inside the loadable segment. */
static int tkc_vdso_table(const tkc_vdso_img *m, uint64_t v, uint64_t n, uint64_t size,
                          uint64_t *off) {
  if (n > UINT64_MAX / size) return 0;
  return tkc_vdso_at(m, v, n * size, off);
}

static int tkc_vdso_native_data(void) {
  const uint16_t one = 1;
  unsigned char first;
  memcpy(&first, &one, 1);
  return first == 1 ? ELFDATA2LSB : ELFDATA2MSB;
}

/* The ELF header, the one loadable segment and the dynamic section's
 * place: 0 with why set if anything is out of place. */
static int tkc_vdso_headers(tkc_vdso_img *m, uint64_t *dyn_off, uint64_t *dyn_len, char *why,
                            size_t n) {
  Elf64_Ehdr eh;
  Elf64_Phdr ph;
  unsigned i, loads = 0, dyns = 0;
  if (!tkc_vdso_get(m, 0, &eh, sizeof eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != tkc_vdso_native_data() ||
      eh.e_ident[EI_VERSION] != EV_CURRENT || eh.e_type != ET_DYN ||
      eh.e_machine != TKC_VDSO_MACHINE) {
    tkc_strlcpy(why, "its image is not a 64-bit ELF shared object for this machine", n);
    return 0;
  }
  if (eh.e_phentsize != sizeof ph || eh.e_phnum == 0 || eh.e_phnum > TKC_VDSO_MAX_PHDRS ||
      eh.e_phoff > m->size || (uint64_t)eh.e_phnum * sizeof ph > m->size - eh.e_phoff) {
    tkc_strlcpy(why, "its program headers lie outside the image", n);
    return 0;
  }
  for (i = 0; i < eh.e_phnum; i++) {
    (void)tkc_vdso_get(m, eh.e_phoff + (uint64_t)i * sizeof ph, &ph, sizeof ph);
    if (ph.p_type == PT_LOAD) {
      loads++;
      m->load_vaddr = ph.p_vaddr;
      m->load_off = ph.p_offset;
      m->load_len = ph.p_filesz;
      m->load_exec = (ph.p_flags & PF_X) != 0;
    } else if (ph.p_type == PT_DYNAMIC) {
      dyns++;
      *dyn_off = ph.p_offset;
      *dyn_len = ph.p_filesz;
    }
  }
  if (loads != 1 || dyns != 1) {
    tkc_fmt(why, n, "it has %u loadable segments and %u dynamic sections (expected one each)",
            loads, dyns);
    return 0;
  }
  if (m->load_off > m->size || m->load_len > m->size - m->load_off || !m->load_exec) {
    tkc_strlcpy(why, "its loadable segment lies outside the image or is not executable", n);
    return 0;
  }
  if (*dyn_off < m->load_off || *dyn_off - m->load_off > m->load_len ||
      *dyn_len > m->load_len - (*dyn_off - m->load_off)) {
    tkc_strlcpy(why, "its dynamic section lies outside its loadable segment", n);
    return 0;
  }
  return 1;
}

/* The dynamic section's tables. */
typedef struct tkc_vdso_dyn {
  uint64_t symtab, strtab, strsz, syment, hash, gnu_hash, versym, verdef, verdefnum;
} tkc_vdso_dyn;

static int tkc_vdso_dynamic(const tkc_vdso_img *m, uint64_t off, uint64_t len, tkc_vdso_dyn *d,
                            char *why, size_t n) {
  Elf64_Dyn e;
  uint64_t k;
  memset(d, 0, sizeof *d);
  for (k = 0; k < len / sizeof e; k++) {
    (void)tkc_vdso_get(m, off + k * sizeof e, &e, sizeof e); /* inside: checked above */
    switch (e.d_tag) {
      case DT_NULL:
        if (d->symtab == 0 || d->strtab == 0 || d->strsz == 0 ||
            (d->hash == 0 && d->gnu_hash == 0)) {
          tkc_strlcpy(why, "its dynamic section lacks a symbol, string or hash table", n);
          return 0;
        }
        if (d->syment != 0 && d->syment != sizeof(Elf64_Sym)) {
          tkc_strlcpy(why, "its symbol table's entries are not ELF64 symbols", n);
          return 0;
        }
        if (d->versym != 0 && d->verdef == 0) {
          tkc_strlcpy(why, "it has symbol versions but no version definitions", n);
          return 0;
        }
        return 1;
      case DT_SYMTAB:
        d->symtab = e.d_un.d_ptr;
        break;
      case DT_STRTAB:
        d->strtab = e.d_un.d_ptr;
        break;
      case DT_STRSZ:
        d->strsz = e.d_un.d_val;
        break;
      case DT_SYMENT:
        d->syment = e.d_un.d_val;
        break;
      case DT_HASH:
        d->hash = e.d_un.d_ptr;
        break;
      case DT_GNU_HASH:
        d->gnu_hash = e.d_un.d_ptr;
        break;
      case DT_VERSYM:
        d->versym = e.d_un.d_ptr;
        break;
      case DT_VERDEF:
        d->verdef = e.d_un.d_ptr;
        break;
      case DT_VERDEFNUM:
        d->verdefnum = e.d_un.d_val;
        break;
      default:
        break;
    }
  }
  tkc_strlcpy(why, "its dynamic section is not terminated", n);
  return 0;
}

static int tkc_vdso_u32(const tkc_vdso_img *m, uint64_t v, uint32_t *x) {
  uint64_t off;
  return tkc_vdso_at(m, v, 4, &off) && tkc_vdso_get(m, off, x, 4);
}

/* How many symbols the table holds: the SysV hash table's chain count,
 * else the GNU hash table's highest chain's end. 0 if it cannot tell. */
static uint64_t tkc_vdso_nsyms(const tkc_vdso_img *m, const tkc_vdso_dyn *d) {
  uint32_t hdr[4], b, h, top = 0;
  uint64_t i, buckets, chains;
  if (d->hash != 0) return tkc_vdso_u32(m, d->hash + 4, &hdr[1]) ? hdr[1] : 0;
  for (i = 0; i < 4; i++)
    if (!tkc_vdso_u32(m, d->gnu_hash + 4 * i, &hdr[i])) return 0;
  /* nbuckets, symoffset, bloom words (64-bit here), bloom shift */
  if (hdr[0] == 0 || hdr[0] > TKC_VDSO_MAX_SYMS || hdr[2] > TKC_VDSO_MAX_SYMS) return 0;
  buckets = d->gnu_hash + 16 + (uint64_t)hdr[2] * 8;
  chains = buckets + (uint64_t)hdr[0] * 4;
  for (i = 0; i < hdr[0]; i++) {
    if (!tkc_vdso_u32(m, buckets + 4 * i, &b)) return 0;
    if (b > top) top = b;
  }
  if (top == 0) return hdr[1]; /* no hashed symbol: only the unhashed ones */
  if (top < hdr[1]) return 0;
  for (i = top; i < TKC_VDSO_MAX_SYMS; i++) {
    if (!tkc_vdso_u32(m, chains + 4 * (i - hdr[1]), &h)) return 0;
    if (h & 1) return i + 1;
  }
  return 0;
}

/* The NUL-terminated string at offset name of the string table is want. */
static int tkc_vdso_name_is(const tkc_vdso_img *m, uint64_t stroff, uint64_t strsz, uint64_t name,
                            const char *want) {
  size_t len = strlen(want);
  if (name >= strsz || (uint64_t)len >= strsz - name) return 0;
  return memcmp(m->img + stroff + name, want, len) == 0 && m->img[stroff + name + len] == '\0';
}

/* Version index ndx is defined and named version: the walk of the
 * version definitions (each one checked inside the image). */
static int tkc_vdso_version_is(const tkc_vdso_img *m, const tkc_vdso_dyn *d, uint64_t stroff,
                               unsigned ndx, const char *version) {
  uint64_t v = d->verdef, off;
  unsigned k;
  for (k = 0; k < TKC_VDSO_MAX_VERDEFS && (d->verdefnum == 0 || k < d->verdefnum); k++) {
    Elf64_Verdef vd;
    Elf64_Verdaux va;
    if (!tkc_vdso_at(m, v, sizeof vd, &off) || !tkc_vdso_get(m, off, &vd, sizeof vd) ||
        vd.vd_version != VER_DEF_CURRENT)
      return 0;
    if (vd.vd_ndx == ndx) {
      if (vd.vd_cnt == 0 || v > UINT64_MAX - vd.vd_aux ||
          !tkc_vdso_at(m, v + vd.vd_aux, sizeof va, &off) || !tkc_vdso_get(m, off, &va, sizeof va))
        return 0;
      return tkc_vdso_name_is(m, stroff, d->strsz, va.vda_name, version);
    }
    if (vd.vd_next == 0 || v > UINT64_MAX - vd.vd_next) return 0;
    v += vd.vd_next;
  }
  return 0;
}

uintptr_t tkc_vdso_symbol(const void *image, size_t size, const char *name, const char *version,
                          char *why, size_t n) {
  tkc_vdso_img m;
  tkc_vdso_dyn d;
  uint64_t dyn_off = 0, dyn_len = 0, nsyms, symoff, stroff, veroff = 0, i;
  int named = 0;
  memset(&m, 0, sizeof m);
  m.img = (const unsigned char *)image;
  m.size = size;
  if (image == NULL || !tkc_vdso_headers(&m, &dyn_off, &dyn_len, why, n) ||
      !tkc_vdso_dynamic(&m, dyn_off, dyn_len, &d, why, n))
    return 0;
  nsyms = tkc_vdso_nsyms(&m, &d);
  if (nsyms == 0 || nsyms > TKC_VDSO_MAX_SYMS) {
    tkc_strlcpy(why, "its hash table gives no symbol count within the image", n);
    return 0;
  }
  if (!tkc_vdso_table(&m, d.symtab, nsyms, sizeof(Elf64_Sym), &symoff) ||
      !tkc_vdso_table(&m, d.strtab, d.strsz, 1, &stroff) ||
      (d.versym != 0 && !tkc_vdso_table(&m, d.versym, nsyms, sizeof(Elf64_Half), &veroff))) {
    tkc_strlcpy(why, "its symbol, string or version table lies outside its loadable segment", n);
    return 0;
  }
  for (i = 0; i < nsyms; i++) {
    Elf64_Sym s;
    Elf64_Half ver;
    uint64_t at;
    unsigned bind;
    if (!tkc_vdso_get(&m, symoff + i * sizeof s, &s, sizeof s)) break;
    bind = ELF64_ST_BIND(s.st_info);
    if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || (bind != STB_GLOBAL && bind != STB_WEAK) ||
        s.st_shndx == SHN_UNDEF || !tkc_vdso_name_is(&m, stroff, d.strsz, s.st_name, name))
      continue;
    named = 1;
    if (d.versym != 0 && (!tkc_vdso_get(&m, veroff + i * sizeof ver, &ver, sizeof ver) ||
                          !tkc_vdso_version_is(&m, &d, stroff, ver & 0x7fffu, version)))
      continue;
    if (!tkc_vdso_at(&m, s.st_value, 1, &at)) {
      tkc_fmt(why, n, "its %s lies outside its loadable segment", name);
      return 0;
    }
    tkc_fmt(why, n, "the vDSO's %s", name);
    return (uintptr_t)image + (uintptr_t)at;
  }
  if (named)
    tkc_fmt(why, n, "its %s is not version %s", name, version);
  else
    tkc_fmt(why, n, "it defines no %s", name);
  return 0;
}

/* The live image's readable length: the kernel maps it whole, in whole
 * pages, so the first page and its loadable segment as its headers (in
 * that page) state it, up to TKC_VDSO_MAX_SPAN; tkc_vdso_symbol checks
 * every table against this length. */
static size_t tkc_vdso_span(const void *image) {
  tkc_vdso_img m;
  Elf64_Ehdr eh;
  Elf64_Phdr ph;
  unsigned i;
  uint64_t end = TKC_VDSO_HEAD;
  memset(&m, 0, sizeof m);
  m.img = (const unsigned char *)image;
  m.size = TKC_VDSO_HEAD;
  if (!tkc_vdso_get(&m, 0, &eh, sizeof eh) || eh.e_phentsize != sizeof ph ||
      eh.e_phnum > TKC_VDSO_MAX_PHDRS)
    return TKC_VDSO_HEAD;
  for (i = 0; i < eh.e_phnum; i++) {
    if (!tkc_vdso_get(&m, eh.e_phoff + (uint64_t)i * sizeof ph, &ph, sizeof ph))
      return TKC_VDSO_HEAD;
    if (ph.p_type == PT_LOAD && ph.p_offset <= TKC_VDSO_MAX_SPAN &&
        ph.p_filesz <= TKC_VDSO_MAX_SPAN - ph.p_offset && ph.p_offset + ph.p_filesz > end)
      end = ph.p_offset + ph.p_filesz;
  }
  return (size_t)end;
}

/* Found once: the function (NULL: libc's is used) and why. */
static tkc_vdso_gettime_fn tkc_vdso_fn = NULL;
static int tkc_vdso_tried = 0;
static char tkc_vdso_why[176];

static uint64_t tkc_vdso_libc_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0 || ts.tv_sec < 0 || ts.tv_nsec < 0) return 0;
  return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static void tkc_vdso_find(void) {
  char why[sizeof tkc_vdso_why - 56];
  const void *base = (const void *)(uintptr_t)getauxval(AT_SYSINFO_EHDR);
  uintptr_t at;
  size_t span;
  tkc_vdso_ts ts;
  uint64_t a, v, b;
  tkc_vdso_gettime_fn f;
  why[0] = '\0';
  if (base == NULL) {
    tkc_strlcpy(tkc_vdso_why,
                "libc's clock_gettime: no vDSO (no AT_SYSINFO_EHDR in the auxiliary vector)",
                sizeof tkc_vdso_why);
    return;
  }
  span = tkc_vdso_span(base);
  at = tkc_vdso_symbol(base, span, TKC_VDSO_NAME, TKC_VDSO_VERSION, why, sizeof why);
  if (at == 0) {
    tkc_fmt(tkc_vdso_why, sizeof tkc_vdso_why, "libc's clock_gettime: the vDSO refused: %s", why);
    return;
  }
  f = (tkc_vdso_gettime_fn)at;
  /* its first reading must lie between two of libc's */
  a = tkc_vdso_libc_ns();
  v = f(CLOCK_MONOTONIC, &ts) == 0 && ts.sec >= 0 && ts.nsec >= 0
          ? (uint64_t)ts.sec * UINT64_C(1000000000) + (uint64_t)ts.nsec
          : 0;
  b = tkc_vdso_libc_ns();
  if (a == 0 || v < a || v > b) {
    tkc_fmt(tkc_vdso_why, sizeof tkc_vdso_why,
            "libc's clock_gettime: the vDSO's %s read %llu ns, outside libc's [%llu, %llu]",
            TKC_VDSO_NAME, (unsigned long long)v, (unsigned long long)a, (unsigned long long)b);
    return;
  }
  tkc_fmt(tkc_vdso_why, sizeof tkc_vdso_why, "the vDSO's %s (%s), called directly", TKC_VDSO_NAME,
          TKC_VDSO_VERSION);
  tkc_vdso_fn = f;
}

const char *tkc_os_vdso_setup(void) {
  if (!tkc_vdso_tried) {
    if (tkc_os_syscall_on()) return "the system call (RDTSC is disabled; the vDSO executes it)";
    tkc_vdso_tried = 1;
    tkc_vdso_find();
  }
  tkc_os_vdso_publish();
  return tkc_vdso_why;
}

void tkc_os_vdso_publish(void) {
  TKC_STORE_RELEASE(&tkc_g_os_vdso, tkc_os_syscall_on() ? NULL : tkc_vdso_fn);
}

#else /* no vDSO to call: libc's clock_gettime (or the OS's own clock) */

const char *tkc_os_vdso_setup(void) { return NULL; }
void tkc_os_vdso_publish(void) {}

#endif /* TKC_HAVE_VDSO */
