#!/usr/bin/env python3
"""ci/matrix — the compiler x language x sanitizer x target x CPU matrix.

    ci/matrix [--quick] [--only REGEX] [--jobs N] [--list] [--no-deps] [--rerender]

Run through the ci/matrix wrapper (it makes sure python3 is there). See
ci/README.md for the cells, how to add a compiler or a target, and how to
read the report. Writes out/matrix/{report.md,report.json,report.html} and
one log per cell under out/matrix/logs/. The last line printed is
"N passed, N failed, N skipped" (cells; SKIPPED cells count as skipped).
Exit status 0 iff no cell FAILED.
"""

import argparse
import html
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "out", "matrix")
LOGS = os.path.join(OUT, "logs")
WORK = os.path.join(OUT, "work")

# ---- what the matrix is made of ----------------------------------------
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
HEADERS = ["core-header", "single-header"]
STRICT = ["-Wall", "-Wextra", "-Werror", "-pedantic"]
SAN_COMPILER = "clang-19"
SANITIZERS = [  # name, bazel configs, output tree suffix
    ("asan+ubsan", ["--config=asan", "--config=ubsan"], "asan"),
    ("tsan", ["--config=tsan"], "tsan"),
]
# Cross targets: --config=<arch> (issue 4), run under qemu-user.
ARCHS = [
    ("aarch64", "aarch64-linux-gnu"),
    ("armv7", "arm-linux-gnueabihf"),
    ("ppc64le", "powerpc64le-linux-gnu"),
    ("s390x", "s390x-linux-gnu"),
    ("riscv64", "riscv64-linux-gnu"),
    ("i686", "i686-linux-gnu"),
    ("mips64el", "mips64el-linux-gnuabi64"),
]
# x86 CPU models under qemu-x86_64 -cpu (issue 4). A cell runs with
# --config=cpu-<slug> when .bazelrc has it, else with --config=x86_64_qemu
# --test_env=QEMU_CPU=<model> (qemu-user reads QEMU_CPU as its -cpu).
CPU_MODELS = [
    "qemu64",
    "Nehalem",
    "Haswell",
    "Skylake-Client",
    "EPYC",
    "max",
    "max,-rdtscp",
    "max,vendor=GenuineIntel,level=0x16",
]
# Expected seconds per cell before any has finished (ETA only).
EST = {"bazel": 110.0, "san": 120.0, "arch": 150.0, "cpu": 60.0, "windows": 150.0, "lang": 4.0}

QUICK = [  # regexes over cell names; what `--quick` runs
    r"^clang-19 bazel x86_64$",
    r"^gcc-11 bazel x86_64$",
    r"^clang-19 asan\+ubsan$",
    r"^(gcc-11|clang-19) single-header ",
    r"^gcc-12 cross aarch64$",
    r"^cpu max,-rdtscp$",
]

BAZEL_COMMON = ["--color=no", "--curses=no", "--show_progress_rate_limit=30"]


def slug(s):
    s = s.replace("+", "p")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", s).strip("-")


class Cell(object):
    def __init__(self, name, kind, **kw):
        self.name = name
        self.kind = kind  # bazel san arch cpu windows lang
        self.id = slug(name)
        self.compiler = kw.get("compiler", "")
        self.language = kw.get("language", "")
        self.opt = kw.get("opt", "")
        self.header = kw.get("header", "")
        self.target = kw.get("target", "x86_64")
        self.cpu = kw.get("cpu", "host")
        self.bazel_flags = kw.get("bazel_flags", [])
        self.needs_config = kw.get("needs_config")  # .bazelrc config names (any of)
        self.flags = ""
        self.status = "PENDING"
        self.reason = ""
        self.errors = []
        self.tests = {"passed": 0, "failed": 0, "skipped": 0}
        self.info = None
        self.version = ""
        self.seconds = 0.0
        self.log = os.path.join("logs", self.id + ".log")
        self.notes = []
        self.row = kw.get("row", self.compiler)
        self.col = kw.get("col", "")

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
        }


# ---- helpers -------------------------------------------------------------
def bazelrc_configs():
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


_versions = {}


def compiler_version(path):
    if path not in _versions:
        try:
            out = subprocess.run([path, "--version"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, universal_newlines=True, timeout=30).stdout
            _versions[path] = out.splitlines()[0].strip() if out else ""
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            _versions[path] = "unknown (%s)" % e
    return _versions[path]


TIERS = [
    # a check our shell tests report as failed ("FAIL <what>: <why>"); before
    # the patterns below, which also match the program output those tests
    # print on purpose ("expected timing, validate, ..." on bad input)
    re.compile(r"^FAIL \S"),
    # what the compiler / the test / the sanitizer said
    re.compile(r"(error:|is NOT correct|values: |runtime error|Sanitizer|FATAL|undefined reference|expected |"
               r"Segmentation|Aborted|Test timed out|TIMEOUT)"),
    # what Bazel / the runner said about it
    re.compile(r"(ERROR:|\[exit \d+\])"),
    re.compile(r"(FAILED|FAIL:|fatal|exited with)"),
]


def first_errors(text, n=8):
    """The first lines that say what went wrong: compiler errors, failed
    checks and sanitizer reports first, then Bazel's ERROR and FAILED lines."""
    lines = [l.replace(ROOT + "/", "").rstrip()[:300] for l in text.splitlines()
             if l.strip() and not l.startswith("$ ")]
    out = []
    for tier in TIERS:
        for l in lines:
            if tier.search(l) and l not in out and "Build did NOT complete" not in l:
                out.append(l)
    return out[:n] or lines[-n:]


def fmt_dur(s):
    s = int(round(s))
    if s < 60:
        return "%ds" % s
    if s < 3600:
        return "%dm%02ds" % (s // 60, s % 60) if s < 600 else "%dm" % (s // 60)
    return "%dh%02dm" % (s // 3600, (s % 3600) // 60)


def parse_info(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


# ---- cell definitions ----------------------------------------------------
def all_cells():
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
                for opt in OPTS:
                    cells.append(Cell("%s %s %s %s" % (name, header, lang, opt), "lang", compiler=name,
                                      header=header, language=lang, opt=opt, row=name,
                                      col="%s %s" % (lang, opt)))
    for arch, triple in ARCHS:
        c = Cell("gcc-12 cross %s" % arch, "arch", compiler="%s-gcc" % triple, target=arch,
                 row="cross", col=arch, needs_config=[arch], bazel_flags=["--config=%s" % arch])
        c.triple = triple
        cells.append(c)
    for model in CPU_MODELS:
        c = Cell("cpu %s" % model, "cpu", compiler="gcc-12", cpu=model, row="qemu-x86_64", col=model,
                 needs_config=["cpu-%s" % slug(model), "x86_64_qemu"])
        cells.append(c)
    cells.append(Cell("mingw windows x86_64", "windows", compiler="x86_64-w64-mingw32-gcc", target="windows-x86_64",
                      row="mingw (wine)", col="windows", needs_config=["windows"],
                      bazel_flags=["--config=windows"]))
    return cells


# ---- running -------------------------------------------------------------
class Runner(object):
    def __init__(self, cells, jobs):
        self.cells = cells
        self.jobs = max(1, jobs)
        self.lock = threading.Lock()
        self.done = 0
        self.start = time.time()
        self.durations = {}
        self.bazel_running = None  # (cell, start)

    # -- progress
    def eta(self):
        def est(kind):
            d = self.durations.get(kind)
            return sum(d) / len(d) if d else EST[kind]
        pend = [c for c in self.cells if c.status in ("PENDING", "RUNNING")]
        bazel = 0.0
        for c in pend:
            if c.kind == "lang":
                continue
            e = est(c.kind)
            if c.status == "RUNNING" and self.bazel_running and self.bazel_running[0] is c:
                e = max(0.0, e - (time.time() - self.bazel_running[1]))
            bazel += e
        lang = sum(est("lang") for c in pend if c.kind == "lang") / self.jobs
        return max(bazel, lang)

    def finished(self, cell):
        with self.lock:
            self.done += 1
            if cell.status != "SKIPPED":
                self.durations.setdefault(cell.kind, []).append(cell.seconds)
            extra = ""
            if cell.status == "SKIPPED":
                extra = " (%s)" % cell.reason
            elif cell.status == "FAIL":
                extra = " (%s)" % (cell.errors[0] if cell.errors else cell.reason)
            tests = ""
            if cell.kind != "lang" and cell.status != "SKIPPED":
                tests = " (%s)" % tests_brief(cell)
            print("[%d/%d] %s \u2026 %s %.1fs%s, ETA %s%s" % (
                self.done, len(self.cells), cell.name, cell.status, cell.seconds, tests,
                fmt_dur(self.eta()), extra[:200]), flush=True)

    # -- one process, logged
    def sh(self, log, argv, cwd=ROOT, timeout=600, env=None):
        log.write("$ %s\n" % " ".join(argv))
        log.flush()
        try:
            p = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True, timeout=timeout, env=env,
                               errors="replace")
            out, rc = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            out = (e.output or "") if isinstance(e.output, str) else ""
            out += "\n[ci/matrix] TIMEOUT after %ds\n" % timeout
            rc = 124
        log.write(out)
        if rc != 0:
            log.write("[exit %d]\n" % rc)
        log.flush()
        return rc, out

    # -- cells
    def skip(self, cell, reason):
        cell.status = "SKIPPED"
        cell.reason = reason
        with open(os.path.join(OUT, cell.log), "w") as log:
            log.write("%s: SKIPPED: %s\n" % (cell.name, reason))
        self.finished(cell)

    def run_lang(self, cell, cc, cxx, single_dir, core_srcs):
        t0 = time.time()
        cell.status = "RUNNING"
        wd = os.path.join(WORK, cell.id)
        shutil.rmtree(wd, ignore_errors=True)
        os.makedirs(wd)
        is_cxx = cell.language.startswith("c++")
        drv = cxx if is_cxx else cc
        xlang = ["-x", "c++"] if is_cxx else []
        flags = ["-std=" + cell.language] + STRICT + [cell.opt, "-pthread"]
        cell.flags = " ".join(flags)
        cell.version = compiler_version(drv)
        ok = True
        with open(os.path.join(OUT, cell.log), "w") as log:
            log.write("cell: %s\ncompiler: %s (%s)\nflags: %s\n\n" % (cell.name, drv, cell.version, cell.flags))
            if cell.header == "single-header":
                inc = ["-I" + single_dir]
                lib = [(["-c"] + xlang + flags + inc + [os.path.join(ROOT, "tests/single_header/impl.c")])]
            else:
                inc = ["-I" + os.path.join(ROOT, "src/tickclock")]
                # library sources compiled like //src/tickclock (-D_GNU_SOURCE), in this
                # language mode: the core is C99/C++11 common subset, so C++ modes compile
                # it as C++ too.
                lib = [(["-c"] + xlang + flags + ["-D_GNU_SOURCE"] + inc + core_srcs)]
            mains = ["-c"] + xlang + flags + inc + [os.path.join(ROOT, "tests/tickclock/c_api_test.c"),
                                                   os.path.join(ROOT, "ci/info_main.c")]
            for args in lib + [mains]:
                rc, out = self.sh(log, [drv] + args, cwd=wd, timeout=300)
                if rc != 0:
                    ok = False
                    cell.reason = "compile failed"
                    break
            libobjs = None
            if ok:
                libobjs = sorted(os.path.join(wd, f) for f in os.listdir(wd)
                                 if f.endswith(".o") and f not in ("c_api_test.o", "info_main.o"))
                for prog in ("c_api_test", "info_main"):
                    rc, out = self.sh(log, [drv, "-pthread", os.path.join(wd, prog + ".o")] + libobjs +
                                      ["-o", os.path.join(wd, prog)], cwd=wd, timeout=300)
                    if rc != 0:
                        ok = False
                        cell.reason = "link failed"
                        break
            if ok:
                rc, out = self.sh(log, [os.path.join(wd, "c_api_test")], cwd=wd, timeout=120)
                if rc != 0:
                    ok = False
                    cell.reason = "c_api_test exited %d" % rc
                    cell.tests["failed"] = 1
                else:
                    cell.tests["passed"] = 1
            if ok:
                rc, out = self.sh(log, [os.path.join(wd, "info_main")], cwd=wd, timeout=120)
                cell.info = parse_info(out) if rc == 0 else None
                if cell.info is None:
                    ok = False
                    cell.reason = "ci/info_main failed (exit %d)" % rc
            log.write("\nresult: %s %s\n" % ("PASS" if ok else "FAIL", cell.reason))
        if not ok:
            if cell.tests["failed"] == 0:
                cell.tests["failed"] = 1
            with open(os.path.join(OUT, cell.log)) as f:
                text = f.read()
            cell.errors = first_errors(text.split("\n\n", 1)[-1])
        cell.status = "PASS" if ok else "FAIL"
        cell.seconds = time.time() - t0
        shutil.rmtree(wd, ignore_errors=True)
        self.finished(cell)

    def bazel_flags(self, cell):
        if cell.kind == "cpu":
            cfgs = bazelrc_configs()
            per = "cpu-%s" % slug(cell.cpu)
            if per in cfgs:
                return ["--config=%s" % per]
            return ["--config=x86_64_qemu", "--test_env=QEMU_CPU=%s" % cell.cpu]
        return cell.bazel_flags

    def run_bazel(self, cell):
        t0 = time.time()
        cell.status = "RUNNING"
        self.bazel_running = (cell, t0)
        flags = self.bazel_flags(cell)
        cell.flags = " ".join(flags)
        if cell.kind in ("bazel", "san"):
            cc = dict((n, c) for n, c, _ in COMPILERS)[cell.compiler]
            cell.version = compiler_version(cc)
        elif cell.kind == "arch":
            cell.version = compiler_version("/usr/bin/%s-gcc" % cell.triple)
        elif cell.kind == "cpu":
            cell.version = compiler_version("/usr/bin/gcc-12")
        else:
            cell.version = compiler_version("/usr/bin/x86_64-w64-mingw32-gcc") \
                if os.path.exists("/usr/bin/x86_64-w64-mingw32-gcc") else ""
        ok = True
        with open(os.path.join(OUT, cell.log), "w") as log:
            log.write("cell: %s\nbazel flags: %s\ncompiler: %s\n\n" % (cell.name, cell.flags, cell.version))
            rc, out = self.sh(log, ["bazel", "test", "//..."] + BAZEL_COMMON + flags, timeout=1500)
            # where this cell's test.log files are (a TICKCLOCK_SKIPPED line in
            # one makes its target a skip); test-only configs are not defined
            # for `bazel info`, and they do not move the output tree
            info_flags = [f for f in flags if not f.startswith("--test_env")]
            rct, tl = self.sh(log, ["bazel", "info"] + info_flags + ["bazel-testlogs"], timeout=120)
            if rct != 0:
                rct, tl = self.sh(log, ["bazel", "info", "bazel-testlogs"], timeout=120)
            testlogs = tl.strip().splitlines()[-1] if rct == 0 and tl.strip() else None
            summ = summarize(out, rc, testlogs)
            log.write("\nci/summarize: %s\n" % summ)
            m = re.search(r"(\d+) passed, (\d+) failed, (\d+) skipped", summ)
            if m:
                cell.tests = {"passed": int(m.group(1)), "failed": int(m.group(2)), "skipped": int(m.group(3))}
            ok, cell.reason = cell_verdict(rc, cell.tests)
            if not ok and (rc != 0 or cell.tests["failed"] > 0):
                cell.errors = first_errors(out)
            # what the library chose in this cell's build
            rc2, out2 = self.sh(log, ["bazel", "run"] + BAZEL_COMMON + ["--ui_event_filters=-info,-stdout",
                                                                        "--noshow_progress"] +
                                [f for f in flags if not f.startswith("--test_env")] + ["//ci:info"],
                                timeout=600)
            cell.info = parse_info(out2) if rc2 == 0 else None
            if cell.info is None:
                cell.notes.append("//ci:info did not run (exit %d)" % rc2)
                if ok:
                    ok = False
                    cell.reason = "//ci:info failed (exit %d)" % rc2
                    cell.errors = first_errors(out2)
            if cell.kind in ("bazel", "san") and ok:
                # C++ must link against libstdc++ (Bazel's auto-configured toolchain
                # links with CC, so a clang CC has to bring it in itself).
                rc3, binroot = self.sh(log, ["bazel", "info"] + flags + ["bazel-bin"], timeout=120)
                smoke = os.path.join(binroot.strip().splitlines()[-1] if binroot.strip() else "", "tests",
                                     "smoke_test")
                if rc3 == 0 and os.path.exists(smoke):
                    rc4, dyn = self.sh(log, ["readelf", "-d", smoke], timeout=60)
                    libs = re.findall(r"Shared library: \[(lib(?:std)?c\+\+[^\]]*)\]", dyn)
                    cell.notes.append("C++ runtime: %s" % (", ".join(libs) or "none (static?)"))
                    if not any(l.startswith("libstdc++") for l in libs):
                        ok = False
                        cell.reason = "tests/smoke_test is not linked with libstdc++"
                        cell.errors = [cell.reason] + libs
            log.write("\nresult: %s %s\n" % ("PASS" if ok else "FAIL", cell.reason))
        cell.status = "PASS" if ok else "FAIL"
        cell.seconds = time.time() - t0
        self.bazel_running = None
        self.finished(cell)


def skip_reason(testlogs, target):
    """The "TICKCLOCK_SKIPPED: reason" line of a passed target's test.log
    (a check that could not run on this host said so), or None."""
    if not testlogs:
        return None
    rel = target[2:].replace(":", "/")
    logs = [os.path.join(testlogs, rel, "test.log")]
    d = os.path.join(testlogs, rel)
    if os.path.isdir(d):
        logs += sorted(os.path.join(d, x, "test.log") for x in os.listdir(d) if x.startswith("shard_"))
    for tl in logs:
        try:
            with open(tl, errors="replace") as f:
                for line in f:
                    if line.startswith("TICKCLOCK_SKIPPED: "):
                        return line[len("TICKCLOCK_SKIPPED: "):].strip()
        except OSError:
            continue
    return None


def summarize(log_text, rc, testlogs=None):
    """Same counting as ci/summarize: FLAKY is a failure, a PASSED target
    whose test.log says TICKCLOCK_SKIPPED is a skip."""
    p = f = s = 0
    for line in log_text.splitlines():
        if not line.startswith("//"):
            continue
        m = re.match(r"^(//\S+)\s+(\(cached\) )?PASSED", line)
        if m:
            if skip_reason(testlogs, m.group(1)) is None:
                p += 1
            else:
                s += 1
        elif re.match(r"^//\S+\s+SKIPPED", line):
            s += 1
        elif re.match(r"^//\S+\s+(\(cached\) )?(FLAKY|FAILED|TIMEOUT|NO STATUS|INCOMPLETE|REMOTE FAILURE)", line):
            f += 1
    if rc not in (0, 3) and f == 0:
        f = 1
    return "%d passed, %d failed, %d skipped" % (p, f, s)


def cell_verdict(rc, tests):
    """(ok, reason) of a Bazel cell from bazel's exit code and its counts."""
    if rc != 0 or tests["failed"] > 0:
        return False, "bazel test exited %d" % rc if rc != 0 else "%d failed" % tests["failed"]
    if tests["passed"] == 0:
        return False, "no test passed"
    return True, None


# ---- reports ---------------------------------------------------------------
STATUS_ORDER = {"FAIL": 0, "PASS": 1, "SKIPPED": 2, "PENDING": 3}


def mhz(c):
    if not c.info or c.info.get("hz") is None:
        return ""
    return "%.3f MHz" % (c.info["hz"] / 1e6)


def read_cost(c):
    j = c.to_json()
    if j["read_ns"] is None:
        return ""
    s = "%.1f ns" % j["read_ns"]
    if j["now_read_ns"] is not None:
        s += " (now() %.1f ns)" % j["now_read_ns"]
    return s


def tests_brief(c):
    """'38 passed', '24 passed, 14 skipped', '34 passed, 2 failed': a skipped
    test (target_compatible_with) is not a missing one."""
    t = c.tests
    out = "%d passed" % t["passed"]
    if t["failed"]:
        out += ", %d failed" % t["failed"]
    if t["skipped"]:
        out += ", %d skipped" % t["skipped"]
    return out


def counts(cells):
    return dict((k, sum(1 for c in cells if c.status == k)) for k in ("PASS", "FAIL", "SKIPPED"))


def host_desc():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except IOError:
        pass
    return "%s, %s, %d CPUs" % (platform.platform(), cpu, os.cpu_count() or 0)


def grid(cells, kind_filter):
    """rows, cols, {(row, col): cell} for the cells matching kind_filter."""
    sel = [c for c in cells if kind_filter(c)]
    rows, cols = [], []
    for c in sel:
        if c.row not in rows:
            rows.append(c.row)
        if c.col not in cols:
            cols.append(c.col)
    return rows, cols, dict(((c.row, c.col), c) for c in sel)


def sections(cells):
    """(title, rows, cols, map) for each grid of the report."""
    out = []
    comp = lambda c: c.kind in ("bazel", "san")  # noqa: E731
    out.append(("Host compilers: full test suite (Bazel) and sanitizers",) + grid(cells, comp))
    for h in HEADERS:
        out.append(("Language modes: %s (-Wall -Wextra -Werror -pedantic; c_api_test run)" % h,)
                   + grid(cells, lambda c, h=h: c.kind == "lang" and c.header == h))
    out.append(("Targets (--config=<arch>, QEMU user mode) and Windows",)
               + grid(cells, lambda c: c.kind in ("arch", "windows")))
    out.append(("x86 CPU models (qemu-x86_64 -cpu MODEL)",) + grid(cells, lambda c: c.kind == "cpu"))
    return [s for s in out if s[1]]


def write_md(cells, meta):
    n = counts(cells)
    L = []
    L.append("# tickclock matrix report")
    L.append("")
    L.append("%s run of `ci/matrix%s`, %s, %s total on %s." % (
        "Quick" if meta["quick"] else "Full", meta["args"], meta["finished"], fmt_dur(meta["elapsed_s"]),
        meta["host"]))
    L.append("")
    L.append("**%d cells: %d PASS, %d FAIL, %d SKIPPED.**" % (len(cells), n["PASS"], n["FAIL"], n["SKIPPED"]))
    L.append("")
    for title, rows, cols, m in sections(cells):
        L.append("## " + title)
        L.append("")
        L.append("| | " + " | ".join(cols) + " |")
        L.append("|---|" + "---|" * len(cols))
        for r in rows:
            vals = []
            for col in cols:
                c = m.get((r, col))
                if c is None:
                    vals.append("–")
                else:
                    v = c.status
                    if c.kind != "lang" and c.status != "SKIPPED":
                        v += " (%s)" % tests_brief(c)
                    vals.append(v)
            L.append("| %s | %s |" % (r, " | ".join(vals)))
        L.append("")
    L.append("## Cells")
    L.append("")
    L.append("| cell | status | version | tests p/f/s | source | frequency, method | read cost | time | log |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    lang_rows = {}
    for c in cells:
        if c.kind == "lang":
            lang_rows.setdefault((c.compiler, c.header), []).append(c)
            continue
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s | [log](%s) |" % (
            c.name, c.status + (": " + c.reason if c.status == "SKIPPED" else ""), c.version,
            "%d/%d/%d" % (c.tests["passed"], c.tests["failed"], c.tests["skipped"]) if c.status != "SKIPPED" else "",
            (c.info or {}).get("source", ""),
            ("%s, %s" % (mhz(c), (c.info or {}).get("freq_method", ""))) if c.info else "",
            read_cost(c), "%.0fs" % c.seconds if c.status != "SKIPPED" else "", c.log))
    for (comp, header), cs in lang_rows.items():
        n2 = counts(cs)
        srcs = sorted(set((c.info or {}).get("source", "?") for c in cs if c.info))
        L.append("| %s %s, %d modes | %s | %s | %d/%d/0 | %s | %s | %s | %.0fs | %s |" % (
            comp, header, len(cs), "PASS" if n2["FAIL"] == 0 and n2["PASS"] else
            ("FAIL %d" % n2["FAIL"] if n2["FAIL"] else "SKIPPED"),
            cs[0].version, n2["PASS"], n2["FAIL"], ", ".join(srcs),
            ", ".join(sorted(set("%s, %s" % (mhz(c), c.info.get("freq_method")) for c in cs if c.info))),
            "", sum(c.seconds for c in cs), "see report.json"))
    L.append("")
    fails = [c for c in cells if c.status == "FAIL"]
    if fails:
        L.append("## Failures")
        L.append("")
        for c in fails:
            L.append("### %s ([log](%s))" % (c.name, c.log))
            L.append("")
            L.append("```")
            L.extend(c.errors or [c.reason])
            L.append("```")
            L.append("")
    skips = [c for c in cells if c.status == "SKIPPED"]
    if skips:
        L.append("## Skipped")
        L.append("")
        for c in skips:
            L.append("- %s: %s" % (c.name, c.reason))
        L.append("")
    L.append("%d passed, %d failed, %d skipped" % (n["PASS"], n["FAIL"], n["SKIPPED"]))
    with open(os.path.join(OUT, "report.md"), "w") as f:
        f.write("\n".join(L) + "\n")


CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:20px;color:#1b1f24;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:16px;margin:22px 0 6px}
.meta{color:#57606a;margin-bottom:8px}
.sum span{display:inline-block;padding:3px 10px;border-radius:12px;margin-right:6px;font-weight:600}
table{border-collapse:collapse;margin:4px 0 8px}
th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:center;vertical-align:top}
th{background:#f6f8fa;font-weight:600;max-width:150px;overflow-wrap:anywhere}
th.row{white-space:nowrap}
th.row{text-align:left}
td.c a{color:inherit;text-decoration:none;display:block}
td.c{min-width:54px;font-weight:600;font-size:12px}
td.PASS,.PASS{background:#2da44e;color:#fff} td.FAIL,.FAIL{background:#cf222e;color:#fff}
td.SKIPPED,.SKIPPED{background:#d0d7de;color:#444} td.none{background:#fafbfc;color:#bbb}
td.c small{display:block;font-weight:400;font-size:11px;opacity:.9;white-space:nowrap}
td.SKIPPED small{white-space:normal;max-width:120px;margin:auto}
td.c pre{font-size:10px;text-align:left;white-space:pre-wrap;word-break:break-all;max-width:190px;max-height:9em;overflow:hidden;margin:2px 0 0;font-weight:400}
table.detail td{text-align:left;font-size:12px} table.detail th{overflow-wrap:normal} table.detail td.st{font-weight:600}
pre.err{background:#fff5f5;border:1px solid #f1aeb5;padding:6px;font-size:12px;white-space:pre-wrap}
.legend span{display:inline-block;padding:1px 8px;margin-right:4px;border-radius:3px;font-size:12px}
"""


def write_html(cells, meta):
    n = counts(cells)
    e = html.escape
    H = []
    H.append("<!DOCTYPE html><html><head><meta charset='utf-8'><title>tickclock matrix</title>"
             "<style>%s</style></head><body>" % CSS)
    H.append("<h1>tickclock matrix</h1>")
    H.append("<div class='meta'>%s run of <code>ci/matrix%s</code> &middot; %s &middot; %s total &middot; %s</div>" % (
        "Quick" if meta["quick"] else "Full", e(meta["args"]), e(meta["finished"]), fmt_dur(meta["elapsed_s"]),
        e(meta["host"])))
    H.append("<div class='sum'><span class='PASS'>%d PASS</span><span class='%s'>%d FAIL</span>"
             "<span class='SKIPPED'>%d SKIPPED</span> of %d cells</div>" % (
                 n["PASS"], "FAIL" if n["FAIL"] else "SKIPPED", n["FAIL"], n["SKIPPED"], len(cells)))
    for title, rows, cols, m in sections(cells):
        H.append("<h2>%s</h2><table><tr><th></th>%s</tr>" % (e(title), "".join("<th>%s</th>" % e(c) for c in cols)))
        for r in rows:
            H.append("<tr><th class='row'>%s</th>" % e(r))
            for col in cols:
                c = m.get((r, col))
                if c is None:
                    H.append("<td class='none'>&ndash;</td>")
                    continue
                tip = [c.name, c.status]
                if c.version:
                    tip.append(c.version)
                if c.reason:
                    tip.append(c.reason)
                if c.info:
                    tip.append("source %s, %s, %s, read %s" % (c.info.get("source"), mhz(c),
                                                               c.info.get("freq_method"), read_cost(c)))
                body = e(c.status if c.status != "SKIPPED" else "SKIP")
                small = ""
                if c.kind != "lang" and c.status != "SKIPPED":
                    small += tests_brief(c)
                if c.info and c.status == "PASS":
                    small += ("<br>" if small else "") + e(c.info.get("source", ""))
                if c.status != "SKIPPED":
                    small += ("<br>" if small else "") + "%.0fs" % c.seconds
                elif c.kind != "lang":
                    small = e(c.reason)
                err = ""
                if c.status == "FAIL":
                    err = "<pre>%s</pre>" % e("\n".join((c.errors or [c.reason])[:4]))
                H.append("<td class='c %s' title='%s'><a href='%s'>%s<small>%s</small></a>%s</td>" % (
                    c.status, e(" | ".join(tip), quote=True), e(c.log), body, small, err))
            H.append("</tr>")
        H.append("</table>")
    fails = [c for c in cells if c.status == "FAIL"]
    if fails:
        H.append("<h2>Failures</h2>")
        for c in fails:
            H.append("<h3><a href='%s'>%s</a></h3><pre class='err'>%s</pre>" % (
                e(c.log), e(c.name), e("\n".join(c.errors or [c.reason]))))
    H.append("<h2>All cells</h2><table class='detail'><tr><th>cell</th><th>status</th><th>compiler version</th>"
             "<th>flags</th><th>tests p/f/s</th><th>source</th><th>frequency, method</th><th>read cost</th>"
             "<th>time</th><th>reason / notes</th></tr>")
    for c in sorted(cells, key=lambda c: STATUS_ORDER.get(c.status, 9)):
        H.append("<tr><td><a href='%s'>%s</a></td><td class='st %s'>%s</td><td>%s</td><td><code>%s</code></td>"
                 "<td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
                     e(c.log), e(c.name), c.status, c.status, e(c.version), e(c.flags),
                     "%d/%d/%d" % (c.tests["passed"], c.tests["failed"], c.tests["skipped"])
                     if c.status != "SKIPPED" else "",
                     e((c.info or {}).get("source", "")),
                     e("%s, %s" % (mhz(c), c.info.get("freq_method"))) if c.info else "",
                     e(read_cost(c)), "%.1fs" % c.seconds if c.status != "SKIPPED" else "",
                     e("; ".join(([c.reason] if c.reason else []) + c.notes))))
    H.append("</table></body></html>")
    with open(os.path.join(OUT, "report.html"), "w") as f:
        f.write("\n".join(H) + "\n")


def write_json(cells, meta):
    n = counts(cells)
    doc = dict(meta)
    doc["counts"] = {"cells": len(cells), "pass": n["PASS"], "fail": n["FAIL"], "skipped": n["SKIPPED"]}
    doc["cells"] = [c.to_json() for c in cells]
    with open(os.path.join(OUT, "report.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def rerender():
    """report.md and report.html again from report.json (after a change to
    how the report is written, without running the cells again)."""
    path = os.path.join(OUT, "report.json")

    def bad(what):
        print("ci/matrix: %s: %s" % (path, what), file=sys.stderr)
        return 2

    try:
        with open(path) as f:
            doc = json.load(f)
    except (IOError, ValueError) as e:
        return bad("cannot read a report: %s" % e)
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        return bad("expected an object with a \"cells\" list (a report.json written by ci/matrix)")
    known = dict((c.name, c) for c in all_cells())
    cells = []
    for i, j in enumerate(doc["cells"]):
        c = known.get(j.get("name")) if isinstance(j, dict) else None
        if c is None:
            return bad("cell %d ('%s') is not a cell of this ci/matrix"
                       % (i, j.get("name") if isinstance(j, dict) else j))
        try:
            c.status, c.seconds, c.tests = j["status"], j["seconds"], j["tests"]
            c.version, c.flags, c.log = j["version"], j["flags"], j["log"]
            c.reason, c.errors, c.notes = j["reason"] or "", j["errors"] or [], j["notes"] or []
            if j.get("source") is not None:
                c.info = {"source": j["source"], "hz": j["frequency_hz"],
                          "freq_method": j["frequency_method"], "uncertainty_ppm": j["uncertainty_ppm"],
                          "now_read_ns": j["now_read_ns"], "why": j["why"], "compiler": j["compiled_by"],
                          "candidates": j["candidates"]}
        except KeyError as e:
            return bad("cell %d ('%s') has no field %s" % (i, c.name, e))
        cells.append(c)
    try:
        meta = dict((k, doc[k]) for k in ("quick", "args", "finished", "elapsed_s", "host", "jobs"))
    except KeyError as e:
        return bad("no field %s" % e)
    write_md(cells, meta)
    write_html(cells, meta)
    print("ci/matrix: report.md and report.html rewritten from %s (%d cells)" % (path, len(cells)))
    return 0


# ---- main ------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(prog="ci/matrix", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a handful of representative cells (< 10 min)")
    ap.add_argument("--only", metavar="REGEX", help="only cells whose name matches (case-insensitive search)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                    help="parallel non-Bazel cells (default: CPUs); Bazel cells run one at a time")
    ap.add_argument("--list", action="store_true", help="list the selected cells and exit")
    ap.add_argument("--no-deps", action="store_true", help="do not run ci/deps")
    ap.add_argument("--rerender", action="store_true",
                    help="write report.md and report.html again from out/matrix/report.json, run nothing")
    args = ap.parse_args()
    if args.rerender:
        return rerender()

    cells = all_cells()
    if args.quick:
        cells = [c for c in cells if any(re.search(q, c.name) for q in QUICK)]
    if args.only:
        rx = re.compile(args.only, re.I)
        cells = [c for c in cells if rx.search(c.name)]
    if args.list:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `ci/matrix --list | head` ends quietly
        for c in cells:
            print(c.name)
        print("%d cells" % len(cells))
        return 0
    if not cells:
        print("ci/matrix: no cell selected")
        print("0 passed, 1 failed, 0 skipped")
        return 1

    start = time.time()
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(LOGS)
    os.makedirs(WORK)
    configs = bazelrc_configs()
    arg_str = "".join(" " + a for a in sys.argv[1:])
    print("ci/matrix: %d cells%s, --jobs %d; logs in out/matrix/logs/" % (
        len(cells), " (--quick)" if args.quick else "", args.jobs), flush=True)

    # 1. install what the cells need
    need = sorted(set(c.compiler for c in cells if c.kind in ("bazel", "san", "lang")),
                  key=lambda n: [x for x, _, _ in COMPILERS].index(n))
    cross_needed = any(c.kind in ("arch", "cpu") and any(x in configs for x in c.needs_config) for c in cells)
    windows_needed = any(c.kind == "windows" and any(x in configs for x in c.needs_config) for c in cells)
    deps_log = os.path.join(LOGS, "deps.log")
    deps_out = ""
    if not args.no_deps:
        t = time.time()
        with open(deps_log, "w") as log:
            r = Runner([], 1)
            rc, deps_out = r.sh(log, [os.path.join(ROOT, "ci/deps"), "matrix"] + need, timeout=1800)
            if cross_needed:
                rc2, o2 = r.sh(log, [os.path.join(ROOT, "ci/deps"), "cross"], timeout=1800)
                deps_out += o2
            if windows_needed:
                rc3, o3 = r.sh(log, [os.path.join(ROOT, "ci/deps"), "windows"], timeout=1800)
                deps_out += o3
        print("ci/matrix: ci/deps matrix %s%s: %.0fs (logs/deps.log)" % (
            " ".join(need), " + ci/deps cross" if cross_needed else "", time.time() - t), flush=True)

    runner = Runner(cells, args.jobs)
    compilers = dict((n, (cc, cxx)) for n, cc, cxx in COMPILERS)

    def missing_reason(name):
        cc, cxx = compilers[name]
        gone = [p for p in (cc, cxx) if not os.access(p, os.X_OK)]
        if not gone:
            return None
        pkg = "g++-" + name[4:] if name.startswith("gcc-") else name
        why = "not installable"
        if re.search(r"no install candidate: %s\b" % re.escape(pkg), deps_out):
            why = "apt has no install candidate for %s" % pkg
        elif args.no_deps:
            why = "not installed (--no-deps)"
        return "%s not installed: %s (see logs/deps.log)" % (" ".join(gone), why)

    # 2. cells that cannot run: SKIPPED with the reason, first
    bazel_cells, lang_cells, skipped = [], [], []
    for c in cells:
        why = missing_reason(c.compiler) if c.kind in ("bazel", "san", "lang") else None
        if not why and c.needs_config and not any(x in configs for x in c.needs_config):
            why = "config %s not defined in .bazelrc" % " or ".join(c.needs_config)
        if why:
            c.status = "SKIPPED"  # before any progress line, so the ETA leaves it out
            skipped.append((c, why))
        else:
            (lang_cells if c.kind == "lang" else bazel_cells).append(c)
    for c, why in skipped:
        runner.skip(c, why)

    # 3. what the language-mode cells compile: the amalgamated header and the core sources
    single_dir = os.path.join(WORK, "single_header")
    core_srcs = []
    if lang_cells:
        os.makedirs(single_dir)
        with open(os.path.join(LOGS, "prepare.log"), "w") as log:
            rc, out = runner.sh(log, ["bazel", "build"] + BAZEL_COMMON + ["//:single_header"], timeout=900)
            rc2, out2 = runner.sh(log, ["bazel", "query", "--output=label",
                                        "kind('source file', deps(//src/tickclock:core_srcs, 1))"], timeout=300)
            if rc == 0:
                rc3, bb = runner.sh(log, ["bazel", "info", "bazel-bin"], timeout=120)
                shutil.copy(os.path.join(bb.strip().splitlines()[-1], "src/single_header/tickclock.h"), single_dir)
            for line in out2.splitlines():
                m = re.match(r"^//src/tickclock:(\S+\.c)$", line.strip())
                if m:
                    core_srcs.append(os.path.join(ROOT, "src/tickclock", m.group(1)))
        if rc != 0 or rc2 != 0 or not core_srcs:
            for c in lang_cells:
                c.status = "FAIL"
                c.reason = "could not build //:single_header or list //src/tickclock:core_srcs (logs/prepare.log)"
                c.errors = [c.reason]
                with open(os.path.join(OUT, c.log), "w") as f:
                    f.write(c.reason + "\n")
                runner.finished(c)
            lang_cells = []

    # 4. run: Bazel cells one after another (one server per workspace), the
    # language-mode cells in a pool beside them.
    def bazel_lane():
        for c in bazel_cells:
            runner.run_bazel(c)

    lane = threading.Thread(target=bazel_lane)
    lane.start()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = [pool.submit(runner.run_lang, c, compilers[c.compiler][0], compilers[c.compiler][1],
                            single_dir, core_srcs) for c in lang_cells]
        for f in futs:
            f.result()
    lane.join()
    shutil.rmtree(WORK, ignore_errors=True)

    elapsed = time.time() - start
    meta = {
        "quick": args.quick,
        "args": arg_str,
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "elapsed_s": round(elapsed, 1),
        "host": host_desc(),
        "jobs": args.jobs,
    }
    write_json(cells, meta)
    write_md(cells, meta)
    write_html(cells, meta)
    n = counts(cells)
    print("ci/matrix: %d cells in %s: %d PASS, %d FAIL, %d SKIPPED; report: out/matrix/report.{md,json,html}" % (
        len(cells), fmt_dur(elapsed), n["PASS"], n["FAIL"], n["SKIPPED"]))
    for c in cells:
        if c.status == "FAIL":
            print("FAIL: %s (%s): %s" % (c.name, c.log, (c.errors or [c.reason])[0]))
    print("%d passed, %d failed, %d skipped" % (n["PASS"], n["FAIL"], n["SKIPPED"]))
    return 1 if n["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
