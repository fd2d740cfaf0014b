"""How ci/matrix runs one cell, and the progress line of each finished one.

Runner(cells, jobs, out) runs a Bazel cell (run_bazel: the suite, counted by
ci/matrix_lab/bazel_results.py, then //ci:info and the C++ runtime check), a guest cell
(run_guest: ci/guest --json) or a language-mode cell (run_lang: plain
compiler calls); every command and its output goes into the cell's log
under out/, the cell's fields get its result. matrix_run.py decides which
cells run and in which lane; matrix_cells.py says what each cell is.
"""

import json
import os
import re
import shutil
import subprocess
import threading
import time

import bazel_results
from matrix_cells import EST, ROOT, bazelrc_configs
from matrix_report import fmt_dur, tests_brief
from matrix_shard import cache_key, process_stats, remote_flags

BAZEL_COMMON = ["--color=no", "--curses=no", "--show_progress_rate_limit=30"]


# ---- what a command said --------------------------------------------------
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
    """The last line of text that is a JSON object (ci/info, ci/guest --json)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


# ---- running ---------------------------------------------------------------
class Runner(object):
    def __init__(self, cells, jobs, out=None):
        self.cells = cells
        self.jobs = max(1, jobs)
        self.out = out  # the report's folder: cell logs go to out/logs/
        self.work = os.path.join(out, "work") if out else None  # scratch of the language-mode cells
        self.lock = threading.Lock()
        self.done = 0
        self.start = time.time()
        self.durations = {}
        self.bazel_running = None  # (cell, start)
        self.remote = None  # --remote-cache URL
        self.remote_total = {"processes": 0, "hits": 0, "internal": 0, "bazel_runs": 0}
        self.report = None  # called (under the lock) after each finished cell: the partial report
        self.last_stats = None

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

    def cell_log(self, cell, mode="w"):
        return open(os.path.join(self.out, cell.log), mode)

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
        with self.cell_log(cell) as log:
            log.write("%s: SKIPPED: %s\n" % (cell.name, reason))
        self.finished(cell)

    def fail(self, cell, reason):
        """A cell that could not start: FAIL with the reason as its log."""
        cell.status = "FAIL"
        cell.reason = reason
        cell.errors = [reason]
        with self.cell_log(cell) as f:
            f.write(reason + "\n")
        self.finished(cell)

    def run_lang(self, cell, cc, cxx, single_dir, core_srcs):
        """Compiles the library and c_api_test + ci/info_main in the cell's
        language mode, links and runs them."""
        t0 = time.time()
        self.started(cell)
        wd = os.path.join(self.work, cell.id)
        shutil.rmtree(wd, ignore_errors=True)
        os.makedirs(wd)
        drv = cxx if cell.language.startswith("c++") else cc
        cell.version = compiler_version(drv)
        with self.cell_log(cell) as log:
            ok = self._lang_build(cell, drv, wd, single_dir, core_srcs, log) and \
                self._lang_run(cell, wd, log)
            log.write("\nresult: %s %s\n" % ("PASS" if ok else "FAIL", cell.reason))
        if not ok:
            if cell.tests["failed"] == 0:
                cell.tests["failed"] = 1
            with self.cell_log(cell, "r") as f:
                text = f.read()
            cell.errors = first_errors(text.split("\n\n", 1)[-1])
        cell.status = "PASS" if ok else "FAIL"
        cell.seconds = time.time() - t0
        shutil.rmtree(wd, ignore_errors=True)
        self.finished(cell)

    def _lang_build(self, cell, drv, wd, single_dir, core_srcs, log):
        flags, user, lib, mains = cell.lang_compiles(single_dir, core_srcs)
        cell.flags = " ".join(flags)
        log.write("cell: %s\ncompiler: %s (%s)\nflags: %s\n\n" % (cell.name, drv, cell.version, cell.flags))
        if user:
            cell.flags += "; implementation file: " + " ".join(user)
            log.write("implementation file flags: %s\n\n" % " ".join(user))
        for args in (lib, mains):
            rc, _ = self.sh(log, [drv] + args, cwd=wd, timeout=300)
            if rc != 0:
                cell.reason = "compile failed"
                return False
        libobjs = sorted(os.path.join(wd, f) for f in os.listdir(wd)
                         if f.endswith(".o") and f not in ("c_api_test.o", "info_main.o"))
        for prog in ("c_api_test", "info_main"):
            rc, _ = self.sh(log, [drv, "-pthread", os.path.join(wd, prog + ".o")] + libobjs +
                            ["-o", os.path.join(wd, prog)], cwd=wd, timeout=300)
            if rc != 0:
                cell.reason = "link failed"
                return False
        return True

    def _lang_run(self, cell, wd, log):
        rc, _ = self.sh(log, [os.path.join(wd, "c_api_test")], cwd=wd, timeout=120)
        if rc != 0:
            cell.reason = "c_api_test exited %d" % rc
            cell.tests["failed"] = 1
            return False
        cell.tests["passed"] = 1
        rc, out = self.sh(log, [os.path.join(wd, "info_main")], cwd=wd, timeout=120)
        cell.info = parse_info(out) if rc == 0 else None
        if cell.info is None:
            cell.reason = "ci/info_main failed (exit %d)" % rc
            return False
        return True

    def run_guest(self, cell):
        """`ci/guest --only NAME --json`: the item's status, counts and the
        source, frequency and method tickclock chose inside the guest."""
        t0 = time.time()
        self.started(cell)
        self.bazel_running = (cell, t0)
        cell.flags = "ci/guest --only %s --json" % cell.item
        wd = os.path.join(self.work, cell.id)
        with self.cell_log(cell) as log:
            log.write("cell: %s\n\n" % cell.name)
            rc, out = self.sh(log, [os.path.join(ROOT, "ci/guest"), "--only", cell.item, "--json", "--no-deps",
                                    "--out", wd], timeout=900)
            item = None
            for i in (parse_info(out) or {}).get("items", []):
                if i.get("name") == cell.item:
                    item = i
            if item is None:
                ok = False
                cell.reason = "ci/guest gave no report (exit %d)" % rc
                cell.errors = first_errors(out)
            else:
                ok = self._guest_item(cell, item, rc, wd, log)
            log.write("\nresult: %s %s\n" % (cell.status if cell.status == "SKIPPED" else
                                               ("PASS" if ok else "FAIL"), cell.reason))
        shutil.rmtree(wd, ignore_errors=True)
        if cell.status != "SKIPPED":
            cell.status = "PASS" if ok else "FAIL"
        cell.seconds = time.time() - t0
        self.bazel_running = None
        self.finished(cell)

    def _guest_item(self, cell, item, rc, wd, log):
        """The cell's fields from ci/guest's item; True when it passed (or skipped)."""
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
        return ok

    def run_bazel(self, cell):
        """`bazel test //...` with the cell's flags, then //ci:info built the
        same way, then (host compilers) the C++ runtime of a test binary."""
        t0 = time.time()
        self.started(cell)
        self.bazel_running = (cell, t0)
        flags = cell.flags_for(bazelrc_configs())
        cell.flags = " ".join(flags)
        drv = cell.driver()
        cell.version = compiler_version(drv) if drv else ""
        key = cache_key(cell.name, cell.version, flags)
        stats = []
        with self.cell_log(cell) as log:
            log.write("cell: %s\nbazel flags: %s\ncompiler: %s\n\n" % (cell.name, cell.flags, cell.version))
            ok = self._bazel_suite(cell, flags, key, stats, log)
            ok = self._bazel_info(cell, flags, key, stats, log, ok)
            if cell.kind in ("bazel", "san") and ok:
                ok = self._cxx_runtime(cell, flags, log)
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

    def _bazel_suite(self, cell, flags, key, stats, log):
        rc, out = self.sh(log, ["bazel", "test", "//..."] + BAZEL_COMMON + flags, timeout=1500, cache_key=key)
        stats.append(self.last_stats)
        # where this cell's test.log files are (a TICKCLOCK_SKIPPED line in
        # one makes its target a skip); test-only configs are not defined
        # for `bazel info`, and they do not move the output tree
        info_flags = [f for f in flags if not f.startswith("--test_env")]
        rct, tl = self.sh(log, ["bazel", "info"] + info_flags + ["bazel-testlogs"], timeout=120)
        if rct != 0:
            rct, tl = self.sh(log, ["bazel", "info", "bazel-testlogs"], timeout=120)
        testlogs = tl.strip().splitlines()[-1] if rct == 0 and tl.strip() else None
        res = bazel_results.results(out, testlogs)
        cell.tests = bazel_results.counts(res, rc)
        cell.skipped_tests = bazel_results.skipped_tests(res, ROOT, cell.platform())
        log.write("\nci/summarize: %s\n" % bazel_results.summary(cell.tests))
        ok, cell.reason = bazel_results.cell_verdict(rc, cell.tests)
        if not ok and (rc != 0 or cell.tests["failed"] > 0):
            cell.errors = first_errors(out)
        return ok

    def _bazel_info(self, cell, flags, key, stats, log, ok):
        """What the library chose in this cell's build (//ci:info). With a
        remote cache, Bazel's INFO lines stay: they count the hits."""
        rc, out = self.sh(log, ["bazel", "run"] + BAZEL_COMMON +
                          ["--ui_event_filters=-stdout" if self.remote else "--ui_event_filters=-info,-stdout",
                           "--noshow_progress"] +
                          [f for f in flags if not f.startswith("--test_env")] + ["//ci:info"],
                          timeout=600, cache_key=key)
        stats.append(self.last_stats)
        cell.info = parse_info(out) if rc == 0 else None
        if cell.info is None:
            cell.notes.append("//ci:info did not run (exit %d)" % rc)
            if ok:
                ok = False
                cell.reason = "//ci:info failed (exit %d)" % rc
                cell.errors = first_errors(out)
        return ok

    def _cxx_runtime(self, cell, flags, log):
        """C++ must link against libstdc++ (Bazel's auto-configured toolchain
        links with CC, so a clang CC has to bring it in itself)."""
        rc, binroot = self.sh(log, ["bazel", "info"] + flags + ["bazel-bin"], timeout=120)
        smoke = os.path.join(binroot.strip().splitlines()[-1] if binroot.strip() else "", "tests", "smoke_test")
        if rc != 0 or not os.path.exists(smoke):
            return True
        _, dyn = self.sh(log, ["readelf", "-d", smoke], timeout=60)
        libs = re.findall(r"Shared library: \[(lib(?:std)?c\+\+[^\]]*)\]", dyn)
        cell.notes.append("C++ runtime: %s" % (", ".join(libs) or "none (static?)"))
        if not any(l.startswith("libstdc++") for l in libs):
            cell.reason = "tests/smoke_test is not linked with libstdc++"
            cell.errors = [cell.reason] + libs
            return False
        return True
