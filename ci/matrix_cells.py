"""The cells of ci/matrix: the one file to edit to add a cell.

Each list below turns into cells in ci/matrix.py's all_cells(): a Bazel
suite per host compiler, a language-mode cell per compiler x header x
language x optimisation level, a sanitizer cell per sanitizer, a cell per
cross target and per x86 CPU model (tests/cpu_models.tsv), Windows, and a
cell per guest and per life event of ci/guest (ci/guests.py, the guest table).
A compiler also needs its packages in ci/deps (`ci/deps matrix NAME`); a
target its --config in .bazelrc (see toolchains/README.md).
"""

import os

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
# Cross targets: --config=<arch>, run under qemu-user.
ARCHS = [
    ("aarch64", "aarch64-linux-gnu"),
    ("armv7", "arm-linux-gnueabihf"),
    ("ppc64le", "powerpc64le-linux-gnu"),
    ("s390x", "s390x-linux-gnu"),
    ("riscv64", "riscv64-linux-gnu"),
    ("i686", "i686-linux-gnu"),
    ("mips64el", "mips64el-linux-gnuabi64"),
]
# x86 CPU models under qemu-x86_64 -cpu. A cell runs with
# --config=cpu-<slug> when .bazelrc has it, else with --config=x86_64_qemu
# --test_env=QEMU_CPU=<model> (qemu-user reads QEMU_CPU as its -cpu).
# The models come from tests/cpu_models.tsv (first column), the one table;
# read when the cells are built.
def cpu_models():
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "tests", "cpu_models.tsv")
    with open(path) as f:
        return [l.split()[0] for l in f if l.strip() and not l.lstrip().startswith("#")]
# Guests of ci/guest: (item name, architecture, accelerator) for each guest
# and each of its life events ("x86_64-max", "x86_64-max:pause"); a cell
# runs `ci/guest --only NAME --json`. The guests live in ci/guests.py.
def guest_items():
    import guests
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

