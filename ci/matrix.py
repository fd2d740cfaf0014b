#!/usr/bin/env python3
"""ci/matrix — the compiler x language x sanitizer x target x CPU matrix.

    ci/matrix [--quick] [--only REGEX] [--jobs N] [--list] [--no-deps] [--rerender]
              [--shard K/N [--timings REPORT_JSON]] [--out DIR] [--remote-cache URL]
    ci/matrix --merge DIR... [--out DIR]

Run through the ci/matrix wrapper (it makes sure python3 is there). See
ci/README.md for the cells, how to add a compiler or a target, and how to
read the report. Writes out/matrix/ (--only: out/matrix-only/; or --out DIR)
{report.md,report.json,report.html} and one log per cell under logs/. A run
writes into DIR/current/, the report rewritten as each cell finishes, and
moves it to DIR/ only when every cell has finished: the previous complete
report stays in DIR/ until then. The last line printed is
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
OUT_ONLY = os.path.join(ROOT, "out", "matrix-only")  # where --only runs go without --out
LOGS = os.path.join(OUT, "logs")
WORK = os.path.join(OUT, "work")

# ---- what the matrix is made of: ci/matrix_cells.py, the one file to edit
# to add a cell (a compiler, a sanitizer, a target; CPU models come from
# tests/cpu_models.tsv through it).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matrix_cells import (  # noqa: E402
    ARCHS, COMPILERS, EST, HEADERS, LANGS, OPTS, QUICK, SAN_COMPILER, SANITIZERS, SINGLE_OPTS,
    STRICT, USER_STRICT, USER_STRICT_C, USER_STRICT_CXX, cpu_models, guest_items)
import matrix_report  # noqa: E402
from matrix_report import (  # noqa: E402
    CSS, STATUS_ORDER, counts, fmt_dur, grid, host_desc, machine_brief, mhz, read_cost, sections, shard_lines, tests_brief)


BAZEL_COMMON = ["--color=no", "--curses=no", "--show_progress_rate_limit=30"]


def slug(s):
    s = s.replace("+", "p")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", s).strip("-")


class Cell(object):
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
    # a skip a test reported (TICKCLOCK_SKIPPED, doctest's MESSAGE of it) is
    # not what went wrong, even when its reason names a sanitizer
    lines = [l.replace(ROOT + "/", "").rstrip()[:300] for l in text.splitlines()
             if l.strip() and not l.startswith("$ ") and not l.startswith("TICKCLOCK_SKIPPED: ")
             and "MESSAGE: SKIPPED: " not in l]
    out = []
    for tier in TIERS:
        for l in lines:
            if tier.search(l) and l not in out and "Build did NOT complete" not in l:
                out.append(l)
    return out[:n] or lines[-n:]


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
                for opt in (SINGLE_OPTS if header == "single-header" else OPTS):
                    cells.append(Cell("%s %s %s %s" % (name, header, lang, opt), "lang", compiler=name,
                                      header=header, language=lang, opt=opt, row=name,
                                      col="%s %s" % (lang, opt)))
    for arch, triple in ARCHS:
        c = Cell("gcc-12 cross %s" % arch, "arch", compiler="%s-gcc" % triple, target=arch,
                 row="cross", col=arch, needs_config=[arch], bazel_flags=["--config=%s" % arch])
        c.triple = triple
        cells.append(c)
    for model in cpu_models():
        c = Cell("cpu %s" % model, "cpu", compiler="gcc-12", cpu=model, row="qemu-x86_64", col=model,
                 needs_config=["cpu-%s" % slug(model), "x86_64_qemu"])
        cells.append(c)
    cells.append(Cell("mingw windows x86_64", "windows", compiler="x86_64-w64-mingw32-gcc", target="windows-x86_64",
                      row="mingw (wine)", col="windows", needs_config=["windows"],
                      bazel_flags=["--config=windows"]))
    for item, arch, accel, event in guest_items():
        c = Cell("guest %s" % item, "guest", compiler="qemu-system", target=arch, cpu="%s guest" % accel,
                 row=item.split(":")[0], col=event or "checks")
        c.item = item
        cells.append(c)
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
        self.remote = None  # --remote-cache URL
        self.remote_total = {"processes": 0, "hits": 0, "internal": 0, "bazel_runs": 0}
        self.report = None  # called (under the lock) after each finished cell: the partial report

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
            if self.report:
                self.report()

    def started(self, cell):
        """The partial report shows the cell RUNNING."""
        cell.status = "RUNNING"
        with self.lock:
            if self.report:
                self.report()

    # -- one process, logged
    def sh(self, log, argv, cwd=ROOT, timeout=600, env=None, cache_key=None):
        """Runs argv, output into log. A Bazel build/test/run gets the remote
        cache flags (with --remote-cache) under cache_key; its process counts
        are summed into remote_total and returned in self.last_stats."""
        bazel_exec = argv[:1] == ["bazel"] and argv[1:2] in (["build"], ["test"], ["run"])
        if bazel_exec and self.remote:
            argv = argv[:2] + remote_flags(self.remote, cache_key or "default") + argv[2:]
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
        if bazel_exec:
            st = process_stats(out)
            with self.lock:
                for k in st:
                    self.remote_total[k] += st[k]
                self.remote_total["bazel_runs"] += 1
            self.last_stats = st
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
        self.started(cell)
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
                user = ["-std=" + cell.language] + (USER_STRICT_CXX if is_cxx else USER_STRICT_C) + \
                    [cell.opt, "-pthread"]
                cell.flags += "; implementation file: " + " ".join(user)
                log.write("implementation file flags: %s\n\n" % " ".join(user))
                lib = [(["-c"] + xlang + user + inc +
                        [os.path.join(ROOT, "tests/single_header/impl_after_stdio.c")])]
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

    def run_guest(self, cell):
        """`ci/guest --only NAME --json`: the item's status, counts and the
        source, frequency and method tickclock chose inside the guest."""
        t0 = time.time()
        self.started(cell)
        self.bazel_running = (cell, t0)
        cell.flags = "ci/guest --only %s --json" % cell.item
        wd = os.path.join(WORK, cell.id)
        with open(os.path.join(OUT, cell.log), "w") as log:
            log.write("cell: %s\n\n" % cell.name)
            rc, out = self.sh(log, [os.path.join(ROOT, "ci/guest"), "--only", cell.item, "--json", "--no-deps",
                                    "--out", wd], timeout=900)
            doc = parse_info(out)
            item = None
            for i in (doc or {}).get("items", []):
                if i.get("name") == cell.item:
                    item = i
            ok = False
            if item is None:
                cell.reason = "ci/guest gave no report (exit %d)" % rc
                cell.errors = first_errors(out)
            else:
                cell.version = item.get("kernel") or ""
                if item.get("source"):
                    cell.info = {"source": item["source"], "hz": item.get("frequency_hz"),
                                 "freq_method": item.get("frequency_method"),
                                 "uncertainty_ppm": item.get("uncertainty_ppm"), "why": item.get("why")}
                for k in ("backward_steps", "worst_interval_error_ns", "event_interval_error_ns",
                          "rate_error_ppm", "source_before", "source_after", "boot_s"):
                    if item.get(k) is not None:
                        cell.notes.append("%s: %s" % (k, item[k]))
                key = {"PASS": "passed", "FAIL": "failed", "SKIPPED": "skipped"}.get(item["status"], "failed")
                cell.tests[key] = 1
                ok = item["status"] in ("PASS", "SKIPPED") and rc == 0
                cell.reason = item.get("reason") or ("ci/guest exited %d" % rc if not ok else "")
                if not ok:
                    cell.errors = [cell.reason] + (item.get("tail") or [])[-4:]
                # the guest's serial console, into this cell's log
                glog = os.path.join(wd, item.get("log") or "")
                if os.path.isfile(glog):
                    with open(glog, errors="replace") as f:
                        log.write("\n---- serial console (%s) ----\n%s" % (item.get("log"), f.read()))
                if item["status"] == "SKIPPED":
                    cell.status = "SKIPPED"
            log.write("\nresult: %s %s\n" % (cell.status if cell.status == "SKIPPED" else
                                               ("PASS" if ok else "FAIL"), cell.reason))
        shutil.rmtree(wd, ignore_errors=True)
        if cell.status != "SKIPPED":
            cell.status = "PASS" if ok else "FAIL"
        cell.seconds = time.time() - t0
        self.bazel_running = None
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
        self.started(cell)
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
        key = cache_key(cell.name, cell.version, flags)
        stats = []
        with open(os.path.join(OUT, cell.log), "w") as log:
            log.write("cell: %s\nbazel flags: %s\ncompiler: %s\n\n" % (cell.name, cell.flags, cell.version))
            rc, out = self.sh(log, ["bazel", "test", "//..."] + BAZEL_COMMON + flags, timeout=1500,
                              cache_key=key)
            stats.append(self.last_stats)
            # where this cell's test.log files are (a TICKCLOCK_SKIPPED line in
            # one makes its target a skip); test-only configs are not defined
            # for `bazel info`, and they do not move the output tree
            info_flags = [f for f in flags if not f.startswith("--test_env")]
            rct, tl = self.sh(log, ["bazel", "info"] + info_flags + ["bazel-testlogs"], timeout=120)
            if rct != 0:
                rct, tl = self.sh(log, ["bazel", "info", "bazel-testlogs"], timeout=120)
            testlogs = tl.strip().splitlines()[-1] if rct == 0 and tl.strip() else None
            summ = summarize(out, rc, testlogs)
            cell.skipped_tests = skipped_tests(out, testlogs, platform_of(cell))
            log.write("\nci/summarize: %s\n" % summ)
            m = re.search(r"(\d+) passed, (\d+) failed, (\d+) skipped", summ)
            if m:
                cell.tests = {"passed": int(m.group(1)), "failed": int(m.group(2)), "skipped": int(m.group(3))}
            ok, cell.reason = cell_verdict(rc, cell.tests)
            if not ok and (rc != 0 or cell.tests["failed"] > 0):
                cell.errors = first_errors(out)
            # what the library chose in this cell's build
            # (with a remote cache, Bazel's INFO lines stay: they count the hits)
            rc2, out2 = self.sh(log, ["bazel", "run"] + BAZEL_COMMON +
                                ["--ui_event_filters=-stdout" if self.remote else "--ui_event_filters=-info,-stdout",
                                 "--noshow_progress"] +
                                [f for f in flags if not f.startswith("--test_env")] + ["//ci:info"],
                                timeout=600, cache_key=key)
            stats.append(self.last_stats)
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
            if self.remote:
                cell.remote = dict((k, sum(st[k] for st in stats)) for k in ("hits", "processes", "internal"))
                cell.remote["key"] = key
                log.write("\nremote cache (key %s): %d remote cache hit of %d processes (%d internal)\n" % (
                    key, cell.remote["hits"], cell.remote["processes"], cell.remote["internal"]))
            log.write("\nresult: %s %s\n" % ("PASS" if ok else "FAIL", cell.reason))
        cell.status = "PASS" if ok else "FAIL"
        cell.seconds = time.time() - t0
        self.bazel_running = None
        self.finished(cell)


def skip_reason(testlogs, target):
    """The "TICKCLOCK_SKIPPED: reason" line of a passed target's test.log
    (a check that could not run on this host said so), or None."""
    why = skip_reasons(testlogs, target)
    return why[0] if why else None


def skip_reasons(testlogs, target):
    """Every distinct "TICKCLOCK_SKIPPED: reason" of a target's test.log
    (and its shards' logs), in order; [] when there is none."""
    out = []
    if not testlogs:
        return out
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
                        why = line[len("TICKCLOCK_SKIPPED: "):].strip()
                        if why not in out:
                            out.append(why)
        except OSError:
            continue
    return out


def platform_of(cell):
    """The platform a cell's tests ran for, as its skip reasons name it."""
    if cell.kind == "cpu":
        return "%s under qemu-x86_64 -cpu %s" % (cell.target, cell.cpu)
    if cell.kind == "san":
        return "%s (%s)" % (cell.target, cell.col)
    return cell.target


def incompatible_reason(target, plat):
    """Why Bazel SKIPPED a target: "incompatible with <platform>", its
    target_compatible_with expression and the comment above the rule (or
    above the constant in platforms/defs.bzl) from the BUILD file."""
    why = "incompatible with %s" % plat
    pkg, _, name = target[2:].partition(":")
    text = None
    for b in ("BUILD", "BUILD.bazel"):
        try:
            with open(os.path.join(ROOT, pkg, b), errors="replace") as f:
                text = f.read()
            break
        except (IOError, OSError):
            continue
    if text is None:
        return why
    lines = text.splitlines()
    at = [i for i, l in enumerate(lines) if re.match(r'\s*name\s*=\s*"%s"' % re.escape(name), l)]
    if not at:
        return why
    start = at[0]
    while start > 0 and not re.match(r"^[A-Za-z_][\w.]*\(", lines[start]):
        start -= 1
    end = at[0]
    while end < len(lines) - 1 and not lines[end].startswith(")"):
        end += 1
    expr = None
    for l in lines[start:end + 1]:
        m = re.match(r"\s*target_compatible_with\s*=\s*(.+?),?\s*$", l)
        if m:
            expr = m.group(1)
    comment = []
    i = start - 1
    while i >= 0 and lines[i].lstrip().startswith("#"):
        comment.insert(0, lines[i].lstrip("# ").strip())
        i -= 1
    if not comment and expr and re.match(r"^[A-Z_]+$", expr):
        try:
            with open(os.path.join(ROOT, "platforms", "defs.bzl"), errors="replace") as f:
                dl = f.read().splitlines()
            j = [k for k, l in enumerate(dl) if l.startswith(expr + " =")]
            k = (j[0] if j else 0) - 1
            while j and k >= 0 and dl[k].startswith("#"):
                comment.insert(0, dl[k].lstrip("# ").strip())
                k -= 1
        except (IOError, OSError):
            pass
    if expr:
        why += " (target_compatible_with = %s)" % expr
    if comment:
        c = " ".join(comment)
        why += ": " + (c if len(c) <= 240 else c[:237] + "...")
    return why


def skipped_tests(log_text, testlogs, plat):
    """[{target, reason}] for each target counted as skipped, as summarize()
    counts them: SKIPPED by Bazel, or PASSED with TICKCLOCK_SKIPPED lines."""
    out = []
    for line in log_text.splitlines():
        m = re.match(r"^(//\S+)\s+(\(cached\) )?PASSED", line)
        if m:
            why = skip_reasons(testlogs, m.group(1))
            if why:
                out.append({"target": m.group(1), "reason": "; ".join(why)})
            continue
        m = re.match(r"^(//\S+)\s+SKIPPED", line)
        if m:
            out.append({"target": m.group(1), "reason": incompatible_reason(m.group(1), plat)})
    return out


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


def write_md(cells, meta):
    matrix_report.write_md(cells, meta, OUT)


def write_html(cells, meta):
    matrix_report.write_html(cells, meta, OUT)


def write_json(cells, meta):
    matrix_report.write_json(cells, meta, OUT)


def rerender():
    """report.md and report.html again from report.json (after a change to
    how the report is written, without running the cells again)."""
    path = os.path.join(OUT, "report.json")
    try:
        with open(path) as f:
            doc = json.load(f)
    except (IOError, ValueError) as e:
        raise Usage("%s: cannot read a report: %s" % (path, e))
    cells = cells_from_doc(doc, path)
    meta = doc_meta(doc, path)
    write_md(cells, meta)
    write_html(cells, meta)
    print("ci/matrix: report.md and report.html rewritten from %s (%d cells)" % (path, len(cells)))
    return 0


# ---- shards, merge, remote cache -------------------------------------------
class Usage(Exception):
    """Bad input: one line on stderr, exit 2."""


def set_out(path):
    global OUT, LOGS, WORK
    OUT = path
    LOGS = os.path.join(OUT, "logs")
    WORK = os.path.join(OUT, "work")


def git_state():
    """What was tested: the commit, the branch and whether the working
    tree differs from it (changed or untracked files, .gitignore'd ones not
    counted)."""
    def git(*a):
        p = subprocess.run(["git", "-C", ROOT] + list(a), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           universal_newlines=True, timeout=60)
        return p.returncode, p.stdout
    try:
        rc, top = git("rev-parse", "--show-toplevel")
        if rc != 0 or os.path.realpath(top.strip()) != os.path.realpath(ROOT):
            return {"commit": None, "dirty": None, "note": "not a git checkout"}
        rc, commit = git("rev-parse", "HEAD")
        if rc != 0:
            return {"commit": None, "dirty": None, "note": "no commit yet"}
        _, branch = git("rev-parse", "--abbrev-ref", "HEAD")
        _, st = git("status", "--porcelain")
    except (OSError, subprocess.SubprocessError) as e:
        return {"commit": None, "dirty": None, "note": "git failed: %s" % e}
    changed = [l[3:] for l in st.splitlines() if l.strip()]
    return {"commit": commit.strip(), "branch": branch.strip(), "dirty": bool(changed),
            "changed_count": len(changed), "changed": changed[:10]}


REPORT_ITEMS = ("logs", "report.md", "report.html", "report.json")  # report.json last: it marks a report


def publish(final, staging):
    """Moves the finished report from staging (final/current) into final,
    replacing the previous one (kept in final/prev until the new one is in)."""
    prev = os.path.join(final, "prev")
    shutil.rmtree(prev, ignore_errors=True)
    os.makedirs(prev)
    for name in REPORT_ITEMS:
        if os.path.lexists(os.path.join(final, name)):
            os.rename(os.path.join(final, name), os.path.join(prev, name))
    rest = sorted(n for n in os.listdir(staging) if n not in REPORT_ITEMS)
    for name in rest + [n for n in REPORT_ITEMS if os.path.lexists(os.path.join(staging, n))]:
        dst = os.path.join(final, name)
        if os.path.isdir(dst) and not os.path.islink(dst):
            shutil.rmtree(dst)
        os.replace(os.path.join(staging, name), dst)
    os.rmdir(staging)
    shutil.rmtree(prev, ignore_errors=True)


def user_path(p):
    """A path given on the command line, relative to where ci/matrix was
    started (the wrapper changes into the checkout first)."""
    base = os.environ.get("CI_MATRIX_CWD") or os.getcwd()
    return os.path.normpath(os.path.join(base, os.path.expanduser(p)))


def shown(p):
    r = os.path.relpath(p, ROOT)
    return p if r.startswith("..") else r


def parse_shard(s):
    m = re.match(r"^(\d+)/(\d+)$", s or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise Usage("--shard '%s': expected K/N with 1 <= K <= N (e.g. 1/2)" % s)
    return int(m.group(1)), int(m.group(2))


def lane(cell):
    """Bazel cells run one after another, the language-mode cells in a pool
    beside them: each lane is balanced on its own."""
    return "lang" if cell.kind == "lang" else "bazel"


def load_timings(path, whole_only=False):
    """{cell name: seconds} from a report.json (cells that ran), or {} when
    there is none; an unreadable one is bad input. whole_only: a single
    shard's report counts as none (the next shard run into the same --out
    would otherwise split by another part's times)."""
    if not path or not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            doc = json.load(f)
        cells = doc["cells"]
        if whole_only and doc.get("shard"):
            return {}
        return dict((c["name"], float(c["seconds"])) for c in cells
                    if c.get("status") in ("PASS", "FAIL") and float(c.get("seconds") or 0) > 0)
    except (IOError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise Usage("timings from %s: not a ci/matrix report.json (%s)" % (shown(path), e))


def estimate(cell, timings):
    return timings.get(cell.name, EST[cell.kind])


def split(cells, n, timings):
    """Deterministic split into n shards, balanced by estimated seconds:
    per lane, longest first, each cell onto the shard whose lane is least
    loaded (ties: least total, then lowest index). Within a shard the cells
    keep the matrix's order. Returns [[cells of shard 1], ...]."""
    load = dict(((l, s), 0.0) for l in ("bazel", "lang") for s in range(n))
    total = [0.0] * n
    where = {}
    for ln in ("bazel", "lang"):
        mine = sorted((c for c in cells if lane(c) == ln), key=lambda c: (-estimate(c, timings), c.name))
        for c in mine:
            s = min(range(n), key=lambda i: (load[(ln, i)], total[i], i))
            where[c.name] = s
            e = estimate(c, timings)
            load[(ln, s)] += e
            total[s] += e
    shards = [[] for _ in range(n)]
    for c in cells:
        shards[where[c.name]].append(c)
    return shards


def split_digest(parts):
    """Names the whole split: the shards of one run must all carry the same."""
    import hashlib
    return hashlib.sha256("\n".join("%d %s" % (i + 1, c.name) for i, p in enumerate(parts)
                                     for c in p).encode()).hexdigest()[:16]


def shard_estimate(cells, timings, jobs):
    bazel = sum(estimate(c, timings) for c in cells if lane(c) == "bazel")
    lang = sum(estimate(c, timings) for c in cells if lane(c) == "lang")
    return bazel, lang, max(bazel, lang / max(1, jobs))


def machine():
    """What ran this report: the header of a merged report shows it per shard."""
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        m = re.search(r"^(?:model name|Model|cpu model|cpu)\s*:\s*(.+)$", text, re.M)
        cpu = m.group(1).strip() if m else ""
    except IOError:
        pass
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            cs = f.read().strip()
    except IOError:
        cs = "unknown"
    return {"hostname": platform.node(), "arch": platform.machine(), "cpu": cpu or platform.processor() or "unknown",
            "kernel": "%s %s" % (platform.system(), platform.release()), "clocksource": cs,
            "cpus": os.cpu_count() or 0}


def cache_key(cell_or_name, version, flags):
    """Per-cell remote cache key: the cell, and a digest of the compiler's
    version line and the cell's Bazel flags. Bazel puts it into every
    action's platform properties (--remote_default_exec_properties), which
    are part of the action digest: an HTTP cache ignores
    --remote_instance_name, so that would not separate them."""
    import hashlib
    h = hashlib.sha256(("%s\n%s" % (version, " ".join(flags))).encode()).hexdigest()[:16]
    return "%s-%s" % (slug(cell_or_name), h)


def remote_flags(url, key):
    return ["--remote_cache=%s" % url, "--remote_upload_local_results",
            "--remote_default_exec_properties=tickclock-cache-key=%s" % key]


def process_stats(text):
    """Sums Bazel's closing "INFO: N processes: X remote cache hit, Y internal,
    Z linux-sandbox." lines: {processes, hits, internal}."""
    st = {"processes": 0, "hits": 0, "internal": 0}
    for m in re.finditer(r"^INFO: (\d+) process(?:es)?(?:: (.*?))?\.?$", text, re.M):
        st["processes"] += int(m.group(1))
        for part in (m.group(2) or "").split(","):
            p = re.match(r"\s*(\d+) (.+?)\s*$", part)
            if p and p.group(2) == "remote cache hit":
                st["hits"] += int(p.group(1))
            elif p and p.group(2) == "internal":
                st["internal"] += int(p.group(1))
    return st


def hit_ratio(st):
    real = st["processes"] - st["internal"]
    return "%.0f%%" % (100.0 * st["hits"] / real) if real > 0 else "n/a"


def cells_from_doc(doc, where):
    """Cells (with their results) from a report.json; raises Usage."""
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise Usage("%s: expected an object with a \"cells\" list (a report.json written by ci/matrix)" % where)
    known = dict((c.name, c) for c in all_cells())
    cells = []
    for i, j in enumerate(doc["cells"]):
        c = known.get(j.get("name")) if isinstance(j, dict) else None
        if c is None:
            raise Usage("%s: cell %d ('%s') is not a cell of this ci/matrix"
                        % (where, i, j.get("name") if isinstance(j, dict) else j))
        try:
            c.status, c.seconds, c.tests = j["status"], j["seconds"], j["tests"]
            c.version, c.flags, c.log = j["version"], j["flags"], j["log"]
            c.reason, c.errors, c.notes = j["reason"] or "", j["errors"] or [], j["notes"] or []
            c.remote = j.get("remote_cache")
            c.skipped_tests = j.get("skipped_tests") or []
            if j.get("source") is not None:
                c.info = {"source": j["source"], "hz": j["frequency_hz"],
                          "freq_method": j["frequency_method"], "uncertainty_ppm": j["uncertainty_ppm"],
                          "now_read_ns": j["now_read_ns"], "why": j["why"], "compiler": j["compiled_by"],
                          "candidates": j["candidates"]}
        except KeyError as e:
            raise Usage("%s: cell %d ('%s') has no field %s" % (where, i, c.name, e))
        cells.append(c)
    return cells


META_KEYS = ("quick", "args", "finished", "elapsed_s", "host", "jobs")
META_OPTIONAL = ("machine", "shard", "shards", "selection", "remote_cache", "git", "started", "complete",
                 "interrupted")


def doc_meta(doc, where):
    try:
        meta = dict((k, doc[k]) for k in META_KEYS)
    except KeyError as e:
        raise Usage("%s: no field %s" % (where, e))
    for k in META_OPTIONAL:
        if doc.get(k) is not None:
            meta[k] = doc[k]
    return meta


def merge(dirs, out):
    """Shard reports -> one report: every selected cell exactly once."""
    if os.path.realpath(out) in [os.path.realpath(d) for d in dirs]:
        raise Usage("--out %s is one of the reports to merge; write the merged report elsewhere" % shown(out))
    docs = []
    for d in dirs:
        path = os.path.join(d, "report.json")
        try:
            with open(path) as f:
                doc = json.load(f)
        except (IOError, ValueError) as e:
            raise Usage("%s: cannot read a report: %s" % (shown(path), e))
        cells = cells_from_doc(doc, shown(path))
        docs.append((d, doc, cells, doc_meta(doc, shown(path))))
    # A sharded report names every cell of its run (the selection before the
    # split); reports of one run must together hold each of them.
    runs = {}
    for d, doc, cells, meta in docs:
        sel = tuple(meta.get("selection") or [c.name for c in cells])
        spec = meta.get("shard", {}).get("spec", "1/1")
        for c in cells:
            if c.name not in sel:
                raise Usage("%s: cell '%s' is not in its own selection" % (shown(d), c.name))
        run = runs.setdefault(sel, {})
        if spec in run:
            raise Usage("shard %s given twice: %s and %s (duplicate)" % (spec, shown(run[spec]), shown(d)))
        split_id = meta.get("shard", {}).get("split")
        for other_spec, other in run.items():
            other_id = [m.get("shard", {}).get("split") for dd, _, _, m in docs if dd == other][0]
            if split_id and other_id and split_id != other_id:
                raise Usage("shard %s (%s) and shard %s (%s) were split differently (%s / %s); run every "
                            "shard with the same --timings" % (
                                other_spec, shown(other), spec, shown(d),
                                [m for dd, _, _, m in docs if dd == other][0]["shard"].get("timings"),
                                meta["shard"].get("timings")))
        run[spec] = d
    owner = {}
    for d, doc, cells, meta in docs:
        for c in cells:
            if c.name in owner:
                raise Usage("cell '%s' is in both %s and %s (duplicate)" % (c.name, shown(owner[c.name]), shown(d)))
            owner[c.name] = d
    for sel, run in runs.items():
        for name in sel:
            if name not in owner:
                n = list(run)[0].split("/")[1]
                have = ", ".join(sorted(run))
                raise Usage("cell '%s' is missing: no report holds it (shards given: %s of %s; a shard "
                            "missing, or shards split with different timings)" % (name, have, n))
    # the merged report: cells in the matrix's order, logs copied along
    order = dict((c.name, i) for i, c in enumerate(all_cells()))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "logs"))
    set_out(out)
    merged, shards = [], []
    for d, doc, cells, meta in docs:
        spec = meta.get("shard", {}).get("spec", "1/1")
        sub = "shard-" + spec.replace("/", "-of-")
        for c in cells:
            src = os.path.join(d, c.log)
            if os.path.isfile(src):
                dst = os.path.join(out, c.log)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copyfile(src, dst)
            merged.append(c)
        for extra in ("deps.log", "prepare.log"):
            src = os.path.join(d, "logs", extra)
            if os.path.isfile(src):
                os.makedirs(os.path.join(out, "logs", sub), exist_ok=True)
                shutil.copyfile(src, os.path.join(out, "logs", sub, extra))
        shards.append({"shard": spec, "dir": shown(d), "cells": len(cells), "elapsed_s": meta["elapsed_s"],
                       "finished": meta["finished"], "host": meta["host"], "machine": meta.get("machine"),
                       "args": meta["args"], "remote_cache": meta.get("remote_cache"), "git": meta.get("git")})
    merged.sort(key=lambda c: order[c.name])
    shards.sort(key=lambda s: (int(s["shard"].split("/")[1]), int(s["shard"].split("/")[0]), s["dir"]))
    caches = [s["remote_cache"] for s in shards if s.get("remote_cache")]
    meta = {
        "quick": all(m["quick"] for _, _, _, m in docs),
        "args": " --merge " + " ".join(shown(d) for d in dirs),
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "elapsed_s": max(m["elapsed_s"] for _, _, _, m in docs),
        "host": "%d shard reports" % len(docs),
        "jobs": max(m["jobs"] for _, _, _, m in docs),
        "shards": shards,
        "selection": [c.name for c in merged],
    }
    commits = sorted(set((s.get("git") or {}).get("commit") or "unknown" for s in shards))
    if len(commits) == 1:
        meta["git"] = shards[0].get("git") or {"commit": None, "note": "the shards recorded no commit"}
        if any((s.get("git") or {}).get("dirty") for s in shards):
            meta["git"] = dict(meta["git"], dirty=True)
    else:
        meta["git"] = {"commit": None, "note": "the shards tested different commits: %s" % ", ".join(commits)}
    if caches:
        meta["remote_cache"] = {"url": ", ".join(sorted(set(c["url"] for c in caches))),
                                "hits": sum(c["hits"] for c in caches),
                                "processes": sum(c["processes"] for c in caches),
                                "internal": sum(c["internal"] for c in caches),
                                "bazel_runs": sum(c["bazel_runs"] for c in caches)}
    write_json(merged, meta)
    write_md(merged, meta)
    write_html(merged, meta)
    n = counts(merged)
    for line in shard_lines(meta):
        print("ci/matrix: " + line)
    print("ci/matrix: merged %d reports, %d cells: %d PASS, %d FAIL, %d SKIPPED; report: %s/report.{md,json,html}" % (
        len(docs), len(merged), n["PASS"], n["FAIL"], n["SKIPPED"], shown(out)))
    print("%d passed, %d failed, %d skipped" % (n["PASS"], n["FAIL"], n["SKIPPED"]))
    return 1 if n["FAIL"] else 0


# ---- main ------------------------------------------------------------------
HELP_EPILOG = """\
time:
  the full matrix (249 cells) on 2 cores: about 30 minutes with warm Bazel
  caches (the 218 compiler, target and CPU cells took 25 min, the 31 guest
  cells add about 4 min), about 45 minutes cold (fresh clone); --quick
  (31 cells) 2-11 minutes; one language-mode cell a few seconds; --list,
  --rerender, --merge and --help run nothing.

requirements:
  Debian 12 (x86-64), python3, Bazel 4.2.3 (bazel-bootstrap); the compilers,
  cross toolchains, QEMU, Wine and guest kernels the selected cells need;
  about 3.5 GB of packages for every cell, plus the Bazel output trees.
  Offline once they are installed.

side effects:
  before running cells it calls ci/deps (matrix <compilers>, cross, windows,
  guest: only the groups the selected cells need), which runs apt-get update
  and apt-get install as root (sudo when not root) when a package is
  missing, and may add foreign dpkg architectures (arm64, ppc64el, s390x);
  --no-deps never calls it. Writes only under the output folder: the run
  goes into OUT/current/ (the report rewritten as each cell finishes), and
  replaces OUT/report.{md,json,html} and OUT/logs/ when every cell is done;
  an interrupted run leaves the previous report in place. Bazel's output
  trees (~/.cache/bazel) grow per compiler and target.

The last line is "N passed, N failed, N skipped" (cells); exit 0 iff no cell
FAILED, 2 for bad arguments. See ci/README.md.
"""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not usage + message
        raise Usage(message)


def main():
    try:
        return run(sys.argv[1:])
    except Usage as e:
        print("ci/matrix: %s" % e, file=sys.stderr)
        return 2


def run(argv):
    ap = Parser(prog="ci/matrix", description=__doc__.split("\n\n")[0], epilog=HELP_EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a handful of representative cells (< 10 min)")
    ap.add_argument("--only", metavar="REGEX", help="only cells whose name matches (case-insensitive search)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                    help="parallel non-Bazel cells (default: CPUs); Bazel cells run one at a time")
    ap.add_argument("--list", action="store_true", help="list the selected cells (of --shard K/N) and exit")
    ap.add_argument("--no-deps", action="store_true", help="do not run ci/deps")
    ap.add_argument("--rerender", action="store_true",
                    help="write report.md and report.html again from OUT/report.json, run nothing")
    ap.add_argument("--shard", metavar="K/N",
                    help="run the K-th of N deterministic parts of the selected cells, balanced by time")
    ap.add_argument("--timings", metavar="REPORT_JSON",
                    help="per-cell seconds that balance --shard (default: OUT/report.json if there is one, "
                         "else a static estimate per kind of cell); every shard of a run must use the same")
    ap.add_argument("--out", metavar="DIR",
                    help="where the report and logs go (default: out/matrix; with --only: out/matrix-only)")
    ap.add_argument("--merge", metavar="DIR", nargs="+",
                    help="combine the reports in these folders into one in --out, run nothing")
    ap.add_argument("--remote-cache", metavar="URL",
                    help="Bazel remote cache (http://, https://, grpc://, grpcs://) for every Bazel build, "
                         "with --remote_upload_local_results and a per-cell key")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        raise Usage("--jobs %d: expected 1 or more" % args.jobs)
    if args.out is None and args.only and not (args.merge or args.rerender):
        set_out(OUT_ONLY)  # a partial selection never replaces the full report
    if args.out is not None:
        out = user_path(args.out)
        if not args.out or out == ROOT or ROOT.startswith(out.rstrip("/") + "/"):
            raise Usage("--out %s: not a folder to write a report into (it holds the checkout)" % (args.out or "''"))
        set_out(out)
    if args.remote_cache is not None and not re.match(r"^(https?|grpcs?)://\S+$", args.remote_cache):
        raise Usage("--remote-cache '%s': expected a URL (http://HOST:PORT, grpc://HOST:PORT, ...)" % args.remote_cache)
    if args.merge:
        other = [o for o, v in (("--shard", args.shard), ("--quick", args.quick), ("--only", args.only),
                                ("--list", args.list), ("--rerender", args.rerender),
                                ("--remote-cache", args.remote_cache), ("--timings", args.timings)) if v]
        if other:
            raise Usage("--merge runs nothing; it does not take %s" % ", ".join(other))
        return merge([user_path(d) for d in args.merge], OUT)
    if args.rerender:
        return rerender()
    shard = parse_shard(args.shard) if args.shard is not None else None

    cells = all_cells()
    if args.quick:
        cells = [c for c in cells if any(re.search(q, c.name) for q in QUICK)]
    if args.only:
        try:
            rx = re.compile(args.only, re.I)
        except re.error as e:
            raise Usage("--only '%s': not a regular expression (%s)" % (args.only, e))
        cells = [c for c in cells if rx.search(c.name)]
    selection = [c.name for c in cells]
    split_by = None
    if shard:
        tpath = user_path(args.timings) if args.timings else os.path.join(OUT, "report.json")
        if args.timings and not os.path.exists(tpath):
            raise Usage("--timings %s: no such file" % args.timings)
        timings = load_timings(tpath, whole_only=not args.timings)
        split_by = ("seconds from %s (static estimate for %d cells not in it)"
                    % (shown(tpath), sum(1 for c in cells if c.name not in timings))) if timings else \
            "static estimate per kind"
        parts = split(cells, shard[1], timings)
        cells = parts[shard[0] - 1]
        split_id = split_digest(parts)
    if args.list:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `ci/matrix --list | head` ends quietly
        for c in cells:
            print(c.name)
        if shard:
            for i, part in enumerate(parts):
                b, l, wall = shard_estimate(part, timings, args.jobs)
                print("shard %d/%d: %d cells, Bazel lane %s, language modes %s (%s with --jobs %d)%s" % (
                    i + 1, shard[1], len(part), fmt_dur(b), fmt_dur(l), fmt_dur(wall), args.jobs,
                    "  <- listed" if i + 1 == shard[0] else ""))
            print("split by %s" % split_by)
            print("%d cells (shard %d/%d of %d selected)" % (len(cells), shard[0], shard[1], len(selection)))
        else:
            print("%d cells" % len(cells))
        return 0
    if not cells and not shard:
        print("ci/matrix: no cell selected")
        print("0 passed, 1 failed, 0 skipped")
        return 1

    start = time.time()
    final = OUT
    if os.path.isdir(final) and os.listdir(final) and not (
            os.path.exists(os.path.join(final, "report.json")) or os.path.isdir(os.path.join(final, "logs"))
            or os.path.isdir(os.path.join(final, "current"))):
        raise Usage("--out %s: a folder with other files in it (not a ci/matrix report); refusing to write there"
                    % shown(final))
    # The run writes into final/current/ and replaces final's report only
    # when every cell has finished: the previous complete report stays until then.
    staging = os.path.join(final, "current")
    if os.path.isdir(staging):
        print("ci/matrix: removing %s/ (an earlier run that did not finish)" % shown(staging))
    shutil.rmtree(staging, ignore_errors=True)
    set_out(staging)
    os.makedirs(LOGS)
    os.makedirs(WORK)
    configs = bazelrc_configs()
    arg_str = "".join(" " + a for a in sys.argv[1:])
    print("ci/matrix: %d cells%s%s, --jobs %d; logs in %s/" % (
        len(cells), " (--quick)" if args.quick else "",
        " (shard %d/%d of %d, split by %s)" % (shard[0], shard[1], len(selection), split_by) if shard else "",
        args.jobs, shown(LOGS)), flush=True)

    # 1. install what the cells need
    need = sorted(set(c.compiler for c in cells if c.kind in ("bazel", "san", "lang")),
                  key=lambda n: [x for x, _, _ in COMPILERS].index(n))
    cross_needed = any(c.kind in ("arch", "cpu") and any(x in configs for x in c.needs_config) for c in cells)
    windows_needed = any(c.kind == "windows" and any(x in configs for x in c.needs_config) for c in cells)
    guest_needed = any(c.kind == "guest" for c in cells)
    deps_log = os.path.join(LOGS, "deps.log")
    deps_out = ""
    if not args.no_deps and cells:
        t = time.time()
        with open(deps_log, "w") as log:
            r = Runner([], 1)
            deps_out = ""
            # `ci/deps matrix` without a compiler means every compiler: only
            # when a cell needs one (the other groups bring the host packages)
            if need or not (cross_needed or windows_needed or guest_needed):
                rc, deps_out = r.sh(log, [os.path.join(ROOT, "ci/deps"), "matrix"] + need, timeout=1800)
            if cross_needed:
                rc2, o2 = r.sh(log, [os.path.join(ROOT, "ci/deps"), "cross"], timeout=1800)
                deps_out += o2
            if windows_needed:
                rc3, o3 = r.sh(log, [os.path.join(ROOT, "ci/deps"), "windows"], timeout=1800)
                deps_out += o3
            if guest_needed:
                rc4, o4 = r.sh(log, [os.path.join(ROOT, "ci/deps"), "guest"], timeout=1800)
                deps_out += o4
        print("ci/matrix: ci/deps matrix %s%s%s: %.0fs (logs/deps.log)" % (
            " ".join(need), " + ci/deps cross" if cross_needed else "",
            " + ci/deps guest" if guest_needed else "", time.time() - t), flush=True)

    runner = Runner(cells, args.jobs)
    runner.remote = args.remote_cache
    git = git_state()
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(start))

    def make_meta(complete, interrupted=False):
        meta = {
            "quick": args.quick,
            "args": arg_str,
            "started": started,
            "finished": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()) if complete else
            "not finished (%d of %d cells)" % (sum(1 for c in cells if c.status in ("PASS", "FAIL", "SKIPPED")),
                                               len(cells)),
            "complete": complete,
            "elapsed_s": round(time.time() - start, 1),
            "host": host_desc(),
            "jobs": args.jobs,
            "machine": machine(),
            "git": git,
        }
        if interrupted:
            meta["interrupted"] = True
        if shard:
            meta["shard"] = {"spec": "%d/%d" % shard, "timings": split_by, "split": split_id}
            meta["selection"] = selection
        if args.remote_cache:
            meta["remote_cache"] = dict(runner.remote_total, url=args.remote_cache)
        return meta

    def write_all(meta):
        write_json(cells, meta)
        write_md(cells, meta)
        write_html(cells, meta)

    runner.report = lambda: write_all(make_meta(False))
    write_all(make_meta(False))
    def interrupted(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)
    try:
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
                rc, out = runner.sh(log, ["bazel", "build"] + BAZEL_COMMON + ["//:single_header"], timeout=900,
                                    cache_key=cache_key("prepare single-header", compiler_version(
                                        shutil.which("gcc") or "gcc"), BAZEL_COMMON))
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
                if c.kind == "guest":
                    runner.run_guest(c)
                else:
                    runner.run_bazel(c)

        lane = threading.Thread(target=bazel_lane, daemon=True)
        lane.start()
        # no `with`: leaving it would wait for every queued cell, Ctrl-C included
        pool = ThreadPoolExecutor(max_workers=args.jobs)
        futs = [pool.submit(runner.run_lang, c, compilers[c.compiler][0], compilers[c.compiler][1],
                            single_dir, core_srcs) for c in lang_cells]
        for f in futs:
            while not f.done():
                time.sleep(0.2)  # a signal interrupts a sleep, not a bare wait
            f.result()
        pool.shutdown()
        while lane.is_alive():
            lane.join(0.2)
    except KeyboardInterrupt:
        # the main thread may have been interrupted holding the lock (a SKIPPED cell)
        got = runner.lock.acquire(timeout=5)
        write_all(make_meta(False, interrupted=True))
        if got:
            runner.lock.release()
        print("\nci/matrix: interrupted; the partial report is in %s/report.{md,json,html}, the previous "
              "complete report (if any) stays in %s/" % (shown(OUT), shown(final)), flush=True)
        n = counts(cells)
        print("%d passed, %d failed, %d skipped" % (n["PASS"], n["FAIL"] + 1, n["SKIPPED"]), flush=True)
        os._exit(130)
    shutil.rmtree(WORK, ignore_errors=True)

    elapsed = time.time() - start
    with runner.lock:
        runner.report = None
    write_all(make_meta(True))
    publish(final, staging)
    set_out(final)
    n = counts(cells)
    print("ci/matrix: %d cells in %s: %d PASS, %d FAIL, %d SKIPPED; report: %s/report.{md,json,html}" % (
        len(cells), fmt_dur(elapsed), n["PASS"], n["FAIL"], n["SKIPPED"], shown(OUT)))
    if args.remote_cache:
        t = runner.remote_total
        print("ci/matrix: %d remote cache hit (sum over %d Bazel runs: %d processes, %d internal; %s of the "
              "others from the cache at %s)" % (t["hits"], t["bazel_runs"], t["processes"], t["internal"],
                                                hit_ratio(t), args.remote_cache))
    for c in cells:
        if c.status == "FAIL":
            print("FAIL: %s (%s): %s" % (c.name, c.log, (c.errors or [c.reason])[0]))
    print("%d passed, %d failed, %d skipped" % (n["PASS"], n["FAIL"], n["SKIPPED"]))
    return 1 if n["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
