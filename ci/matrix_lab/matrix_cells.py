"""The cells of ci/matrix: the one file to edit to add a cell.

Each list below turns into cells in all_cells() (at the end of this file):
a Bazel suite per host compiler, a language-mode cell per compiler x header x
language x optimisation level, a sanitizer cell per sanitizer, a cell per
cross target and per x86 CPU model (tests/cpu_models.tsv), Windows, and a
cell per guest and per life event of ci/guest (ci/guest_lab/guest_table.py, the guest table).
A compiler also needs its packages in ci/deps (`ci/deps matrix NAME`); a
target its --config in .bazelrc (see toolchains/README.md). Which
compiler a cross, CPU-model or Windows cell records, and the Bazel flags of
a CPU-model cell, are decided here too (Cell.driver, Cell.flags_for).
"""

import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# Host compilers: name -> (C driver, C++ driver). Packages: ci/deps matrix NAME.
COMPILERS = [
    ("gcc-11", "/usr/bin/gcc-11", "/usr/bin/g++-11"),
    ("gcc-12", "/usr/bin/gcc-12", "/usr/bin/g++-12"),
    ("clang-13", "/usr/bin/clang-13", "/usr/bin/clang++-13"),
    ("clang-14", "/usr/bin/clang-14", "/usr/bin/clang++-14"),
    ("clang-15", "/usr/bin/clang-15", "/usr/bin/clang++-15"),
    ("clang-16", "/usr/bin/clang-16", "/usr/bin/clang++-16"),
    ("clang-19", "/usr/bin/clang-19", "/usr/bin/clang++-19"),
    ("clang-22", "/usr/bin/clang-22", "/usr/bin/clang++-22"),
]
LANGS = ["c99", "c11", "c++11", "c++14", "c++17", "c++20"]
OPTS = ["-O0", "-O2"]
# The single header is what users vendor: checked at the optimisation
# levels where the compilers' warnings differ most.
SINGLE_OPTS = ["-O0", "-O3"]
HEADERS = ["core-header", "single-header"]
STRICT = ["-Wall", "-Wextra", "-Werror", "-pedantic"]
# What users build their own code with: the single header's implementation
# file (with <stdio.h> before it, so no feature-test macro helps) must
# compile without a warning under these too.
USER_STRICT = ["-Wall", "-Wextra", "-Wpedantic", "-Wconversion", "-Wsign-conversion", "-Wshadow",
               "-Wundef", "-Werror"]
USER_STRICT_C = USER_STRICT + ["-Wcast-qual", "-Wstrict-prototypes", "-Wdeclaration-after-statement"]
USER_STRICT_CXX = USER_STRICT + ["-Wold-style-cast"]
SAN_COMPILER = "clang-19"
SANITIZERS = [  # name, bazel configs, output tree suffix
    ("asan+ubsan", ["--config=asan", "--config=ubsan"], "asan"),
    ("tsan", ["--config=tsan"], "tsan"),
]
# Cross targets: --config=<arch>, run under qemu-user, built by Debian's
# /usr/bin/<triple>-gcc (the version the cell records).
ARCHS = [
    ("aarch64", "aarch64-linux-gnu"),
    ("armv7", "arm-linux-gnueabihf"),
    ("ppc64le", "powerpc64le-linux-gnu"),
    ("s390x", "s390x-linux-gnu"),
    ("riscv64", "riscv64-linux-gnu"),
    ("i686", "i686-linux-gnu"),
    ("mips64el", "mips64el-linux-gnuabi64"),
]
# Windows: --config=windows, mingw-w64 under wine.
WINDOWS_COMPILER = ("x86_64-w64-mingw32-gcc", "/usr/bin/x86_64-w64-mingw32-gcc")
# The compiler of the x86 CPU-model cells (the host toolchain of x86_64_qemu).
CPU_COMPILER = ("gcc-12", "/usr/bin/gcc-12")
# x86 CPU models under qemu-x86_64 -cpu. A cell runs with
# --config=cpu-<slug> when .bazelrc has it, else with --config=x86_64_qemu
# --test_env=QEMU_CPU=<model> (qemu-user reads QEMU_CPU as its -cpu).
# The models come from tests/cpu_models.tsv (first column), the one table;
# read when the cells are built.
def cpu_models():
    path = os.path.join(ROOT, "tests", "cpu_models.tsv")
    with open(path) as f:
        return [l.split()[0] for l in f if l.strip() and not l.lstrip().startswith("#")]
# Guests of ci/guest: (item name, architecture, accelerator) for each guest
# and each of its life events ("x86_64-max", "x86_64-max:pause"); a cell
# runs `ci/guest --only NAME --json`. The guests live in ci/guest_lab/guest_table.py.
def guest_items():
    import sys
    if os.path.join(ROOT, "ci") not in sys.path:
        sys.path.append(os.path.join(ROOT, "ci"))
    from guest_lab import guest_table as guests
    out = []
    for g in guests.GUESTS:
        out.append((g["name"], g["arch"], g["accel"], ""))
        if g.get("suites"):
            out.append(("%s:suites" % g["name"], g["arch"], g["accel"], "suites"))
        for e in g["events"]:
            out.append(("%s:%s" % (g["name"], e), g["arch"], g["accel"], e))
    return out
# Expected seconds per cell before any has finished (ETA only).
EST = {"bazel": 110.0, "san": 120.0, "arch": 150.0, "cpu": 60.0, "windows": 150.0, "lang": 4.0,
       "guest": 20.0}

QUICK = [  # regexes over cell names; what `--quick` runs
    r"^clang-19 bazel x86_64$",
    r"^gcc-11 bazel x86_64$",
    r"^clang-19 asan\+ubsan$",
    r"^(gcc-11|clang-19) single-header ",
    r"^gcc-12 cross aarch64$",
    r"^cpu max,-rdtscp$",
    r"^guest x86_64-max$",   # the quick pair of ci/guest (ci/guest --quick)
    r"^guest aarch64-max$",
]


def bazelrc_configs():
    """The config names .bazelrc defines (build:NAME, test:NAME, ...), read
    each time: a cell whose config lands runs by itself."""
    configs = set()
    try:
        with open(os.path.join(ROOT, ".bazelrc")) as f:
            for line in f:
                m = re.match(r"\s*(?:build|test|run|common):([A-Za-z0-9_.+-]+)\s", line)
                if m:
                    configs.add(m.group(1))
    except IOError:
        pass
    return configs


def slug(s):
    s = s.replace("+", "p")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", s).strip("-")


class Cell(object):
    """One cell: what it is (set here), and what its run found (set by the
    runner, or read back from a report.json)."""

    def __init__(self, name, kind, **kw):
        self.name = name
        self.kind = kind  # bazel san arch cpu windows lang guest
        self.id = slug(name)
        self.compiler = kw.get("compiler", "")
        self.language = kw.get("language", "")
        self.opt = kw.get("opt", "")
        self.header = kw.get("header", "")
        self.target = kw.get("target", "x86_64")
        self.cpu = kw.get("cpu", "host")
        self.bazel_flags = kw.get("bazel_flags", [])
        self.needs_config = kw.get("needs_config")  # .bazelrc config names (any of)
        self.triple = kw.get("triple")  # cross cells: the toolchain's triple
        self.item = kw.get("item")  # guest cells: the ci/guest item
        self.flags = ""
        self.status = "PENDING"
        self.reason = ""
        self.errors = []
        self.tests = {"passed": 0, "failed": 0, "skipped": 0}
        self.skipped_tests = []  # [{target, reason}]: each test counted as skipped, and why
        self.info = None
        self.version = ""
        self.seconds = 0.0
        self.log = os.path.join("logs", self.id + ".log")
        self.notes = []
        self.remote = None  # {key, hits, processes, internal} with --remote-cache
        self.row = kw.get("row", self.compiler)
        self.col = kw.get("col", "")

    def driver(self):
        """The C compiler whose version line the cell records, or None."""
        if self.kind in ("bazel", "san", "lang"):
            return dict((n, c) for n, c, _ in COMPILERS)[self.compiler]
        if self.kind == "arch":
            return "/usr/bin/%s-gcc" % self.triple
        if self.kind == "cpu":
            return CPU_COMPILER[1]
        if self.kind == "windows":
            return WINDOWS_COMPILER[1] if os.path.exists(WINDOWS_COMPILER[1]) else None
        return None

    def flags_for(self, configs):
        """The Bazel flags of the cell, given .bazelrc's config names: a CPU
        model has its own --config=cpu-<slug> or runs under x86_64_qemu."""
        if self.kind == "cpu":
            per = "cpu-%s" % slug(self.cpu)
            if per in configs:
                return ["--config=%s" % per]
            return ["--config=x86_64_qemu", "--test_env=QEMU_CPU=%s" % self.cpu]
        return self.bazel_flags

    def lang_compiles(self, single_dir, core_srcs):
        """A language-mode cell's compiler arguments: (its flags, the single
        header's implementation file flags or None, the library's compile,
        the compile of tests/tickclock/c_api_test.c and ci/matrix_lab/info_main.c)."""
        xlang = ["-x", "c++"] if self.language.startswith("c++") else []
        flags = ["-std=" + self.language] + STRICT + [self.opt, "-pthread"]
        user = None
        if self.header == "single-header":
            inc = ["-I" + single_dir]
            user = ["-std=" + self.language] + (USER_STRICT_CXX if xlang else USER_STRICT_C) + \
                [self.opt, "-pthread"]
            lib = ["-c"] + xlang + user + inc + [os.path.join(ROOT, "tests/single_header/impl_after_stdio.c")]
        else:
            inc = ["-I" + os.path.join(ROOT, "src/tickclock")]
            # library sources compiled like //src/tickclock (-D_GNU_SOURCE), in this
            # language mode: the core is C99/C++11 common subset, so C++ modes compile
            # it as C++ too.
            lib = ["-c"] + xlang + flags + ["-D_GNU_SOURCE"] + inc + core_srcs
        mains = ["-c"] + xlang + flags + inc + [os.path.join(ROOT, "tests/tickclock/c_api_test.c"),
                                               os.path.join(ROOT, "ci/matrix_lab/info_main.c")]
        return flags, user, lib, mains

    def platform(self):
        """The platform the cell's tests ran for, as its skip reasons name it."""
        if self.kind == "cpu":
            return "%s under qemu-x86_64 -cpu %s" % (self.target, self.cpu)
        if self.kind == "san":
            return "%s (%s)" % (self.target, self.col)
        return self.target

    def to_json(self):
        info = self.info or {}
        chosen = None
        for c in info.get("candidates", []):
            if c.get("chosen"):
                chosen = c
        return {
            "name": self.name,
            "kind": self.kind,
            "compiler": self.compiler,
            "version": self.version,
            "language": self.language or ("c99+c++11+c++17" if self.kind != "lang" else ""),
            "header": self.header or None,
            "opt": self.opt or None,
            "flags": self.flags,
            "target": self.target,
            "cpu_model": self.cpu,
            "status": self.status,
            "seconds": round(self.seconds, 1),
            "tests": self.tests,
            "skipped_tests": self.skipped_tests,
            "source": info.get("source"),
            "frequency_hz": info.get("hz"),
            "frequency_method": info.get("freq_method"),
            "uncertainty_ppm": info.get("uncertainty_ppm"),
            "read_ns": chosen.get("read_ns") if chosen else None,
            "now_read_ns": info.get("now_read_ns"),
            "why": info.get("why"),
            "compiled_by": info.get("compiler"),
            "candidates": info.get("candidates"),
            "log": self.log,
            "reason": self.reason or None,
            "errors": self.errors or None,
            "notes": self.notes or None,
            "remote_cache": self.remote,
        }


def all_cells():
    """Every cell of the matrix, in the report's order."""
    cells = []
    for name, cc, _ in COMPILERS:
        cells.append(Cell("%s bazel x86_64" % name, "bazel", compiler=name, row=name, col="bazel suite",
                          bazel_flags=["--repo_env=CC=%s" % cc, "--platform_suffix=%s" % name]))
    for san, cfgs, suffix in SANITIZERS:
        cc = dict((n, c) for n, c, _ in COMPILERS)[SAN_COMPILER]
        cells.append(Cell("%s %s" % (SAN_COMPILER, san), "san", compiler=SAN_COMPILER, row=SAN_COMPILER,
                          col=san, needs_config=[c.split("=", 1)[1] for c in cfgs],
                          bazel_flags=cfgs + ["--repo_env=CC=%s" % cc,
                                              "--platform_suffix=%s-%s" % (SAN_COMPILER, suffix)]))
    for name, _, _ in COMPILERS:
        for header in HEADERS:
            for lang in LANGS:
                for opt in (SINGLE_OPTS if header == "single-header" else OPTS):
                    cells.append(Cell("%s %s %s %s" % (name, header, lang, opt), "lang", compiler=name,
                                      header=header, language=lang, opt=opt, row=name,
                                      col="%s %s" % (lang, opt)))
    for arch, triple in ARCHS:
        cells.append(Cell("gcc-12 cross %s" % arch, "arch", compiler="%s-gcc" % triple, target=arch,
                          triple=triple, row="cross", col=arch, needs_config=[arch],
                          bazel_flags=["--config=%s" % arch]))
    for model in cpu_models():
        cells.append(Cell("cpu %s" % model, "cpu", compiler=CPU_COMPILER[0], cpu=model, row="qemu-x86_64",
                          col=model, needs_config=["cpu-%s" % slug(model), "x86_64_qemu"]))
    cells.append(Cell("mingw windows x86_64", "windows", compiler=WINDOWS_COMPILER[0], target="windows-x86_64",
                      row="mingw (wine)", col="windows", needs_config=["windows"],
                      bazel_flags=["--config=windows"]))
    for item, arch, accel, event in guest_items():
        cells.append(Cell("guest %s" % item, "guest", compiler="qemu-system", target=arch, cpu="%s guest" % accel,
                          item=item, row=item.split(":")[0], col=event or "checks"))
    return cells
