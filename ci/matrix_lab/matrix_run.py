"""One run of ci/matrix over a selection of cells: install what they need
(ci/deps), SKIP the cells that cannot run (with the reason), build what the
language-mode cells compile, then run the Bazel and guest cells one after
another beside a pool of language-mode cells. The report is written into
OUT/current/ as each cell finishes and replaces OUT/'s only when every cell
has finished; Ctrl-C (or SIGTERM) leaves the partial report, marked
interrupted, and exits 130.
"""

import os
import platform
import re
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from matrix_cells import COMPILERS, ROOT, bazelrc_configs
from matrix_report import counts, fmt_dur, host_desc, write_html, write_json, write_md
from matrix_runner import BAZEL_COMMON, Runner, compiler_version
from matrix_shard import Usage, cache_key, hit_ratio, shown


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


def staging_dir(final):
    """final/current/, emptied; final must hold a previous report or nothing."""
    if os.path.isdir(final) and os.listdir(final) and not (
            os.path.exists(os.path.join(final, "report.json")) or os.path.isdir(os.path.join(final, "logs"))
            or os.path.isdir(os.path.join(final, "current"))):
        raise Usage("--out %s: a folder with other files in it (not a ci/matrix report); refusing to write there"
                    % shown(final))
    staging = os.path.join(final, "current")
    if os.path.isdir(staging):
        print("ci/matrix: removing %s/ (an earlier run that did not finish)" % shown(staging))
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(os.path.join(staging, "logs"))
    os.makedirs(os.path.join(staging, "work"))
    return staging


def install_deps(cells, configs, logs):
    """`ci/deps` for the groups the cells need; returns what it printed."""
    need = sorted(set(c.compiler for c in cells if c.kind in ("bazel", "san", "lang")),
                  key=lambda n: [x for x, _, _ in COMPILERS].index(n))
    cross_needed = any(c.kind in ("arch", "cpu") and any(x in configs for x in c.needs_config) for c in cells)
    windows_needed = any(c.kind == "windows" and any(x in configs for x in c.needs_config) for c in cells)
    guest_needed = any(c.kind == "guest" for c in cells)
    t = time.time()
    deps_out = ""
    with open(os.path.join(logs, "deps.log"), "w") as log:
        r = Runner([], 1)
        deps = os.path.join(ROOT, "ci/deps")
        # `ci/deps matrix` without a compiler means every compiler: only
        # when a cell needs one (the other groups bring the host packages)
        for wanted, group in ((need or not (cross_needed or windows_needed or guest_needed), ["matrix"] + need),
                              (cross_needed, ["cross"]), (windows_needed, ["windows"]), (guest_needed, ["guest"])):
            if wanted:
                deps_out += r.sh(log, [deps] + group, timeout=1800)[1]
    print("ci/matrix: ci/deps matrix %s%s%s: %.0fs (logs/deps.log)" % (
        " ".join(need), " + ci/deps cross" if cross_needed else "",
        " + ci/deps guest" if guest_needed else "", time.time() - t), flush=True)
    return deps_out


def missing_reason(name, deps_out, no_deps):
    """Why a host compiler's cells cannot run, or None."""
    cc, cxx = dict((n, (cc, cxx)) for n, cc, cxx in COMPILERS)[name]
    gone = [p for p in (cc, cxx) if not os.access(p, os.X_OK)]
    if not gone:
        return None
    pkg = "g++-" + name[4:] if name.startswith("gcc-") else name
    why = "not installable"
    if re.search(r"no install candidate: %s\b" % re.escape(pkg), deps_out):
        why = "apt has no install candidate for %s" % pkg
    elif no_deps:
        why = "not installed (--no-deps)"
    return "%s not installed: %s (see logs/deps.log)" % (" ".join(gone), why)


def sort_out(runner, cells, configs, deps_out, no_deps):
    """SKIPS the cells that cannot run (first, so the ETA leaves them out);
    returns the others: (Bazel-lane cells, language-mode cells)."""
    bazel_cells, lang_cells, skipped = [], [], []
    for c in cells:
        why = missing_reason(c.compiler, deps_out, no_deps) if c.kind in ("bazel", "san", "lang") else None
        if not why and c.needs_config and not any(x in configs for x in c.needs_config):
            why = "config %s not defined in .bazelrc" % " or ".join(c.needs_config)
        if why:
            c.status = "SKIPPED"  # before any progress line, so the ETA leaves it out
            skipped.append((c, why))
        else:
            (lang_cells if c.kind == "lang" else bazel_cells).append(c)
    for c, why in skipped:
        runner.skip(c, why)
    return bazel_cells, lang_cells


def prepare_lang(runner, lang_cells, single_dir):
    """The amalgamated header into single_dir and the core's sources, for
    the language-mode cells: their list, or [] after failing every cell."""
    core_srcs = []
    os.makedirs(single_dir)
    with open(os.path.join(runner.out, "logs", "prepare.log"), "w") as log:
        rc, _ = runner.sh(log, ["bazel", "build"] + BAZEL_COMMON + ["//:single_header"], timeout=900,
                          cache_key=cache_key("prepare single-header", compiler_version(
                              shutil.which("gcc") or "gcc"), BAZEL_COMMON))
        rc2, out2 = runner.sh(log, ["bazel", "query", "--output=label",
                                    "kind('source file', deps(//src/tickclock:core_srcs, 1))"], timeout=300)
        if rc == 0:
            _, bb = runner.sh(log, ["bazel", "info", "bazel-bin"], timeout=120)
            shutil.copy(os.path.join(bb.strip().splitlines()[-1], "src/single_header/tickclock.h"), single_dir)
        for line in out2.splitlines():
            m = re.match(r"^//src/tickclock:(\S+\.c)$", line.strip())
            if m:
                core_srcs.append(os.path.join(ROOT, "src/tickclock", m.group(1)))
    if rc != 0 or rc2 != 0 or not core_srcs:
        for c in lang_cells:
            runner.fail(c, "could not build //:single_header or list //src/tickclock:core_srcs (logs/prepare.log)")
        return []
    return core_srcs


def run_lanes(runner, bazel_cells, lang_cells, jobs, single_dir, core_srcs):
    """Bazel cells one after another (one server per workspace), the
    language-mode cells in a pool beside them."""
    def bazel_lane():
        for c in bazel_cells:
            if c.kind == "guest":
                runner.run_guest(c)
            else:
                runner.run_bazel(c)

    compilers = dict((n, (cc, cxx)) for n, cc, cxx in COMPILERS)
    lane = threading.Thread(target=bazel_lane, daemon=True)
    lane.start()
    # no `with`: leaving it would wait for every queued cell, Ctrl-C included
    pool = ThreadPoolExecutor(max_workers=jobs)
    futs = [pool.submit(runner.run_lang, c, compilers[c.compiler][0], compilers[c.compiler][1],
                        single_dir, core_srcs) for c in lang_cells]
    for f in futs:
        while not f.done():
            time.sleep(0.2)  # a signal interrupts a sleep, not a bare wait
        f.result()
    pool.shutdown()
    while lane.is_alive():
        lane.join(0.2)


class RunReport(object):
    """The report of a run in progress: rewritten in staging after each
    cell, once more when the run ends (complete or interrupted)."""

    def __init__(self, args, argv, cells, start, shard, runner, staging):
        self.args, self.argv, self.cells, self.start = args, argv, cells, start
        self.shard, self.runner, self.staging = shard, runner, staging
        self.git = git_state()
        self.started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(start))

    def meta(self, complete, interrupted=False):
        args, cells, shard = self.args, self.cells, self.shard
        meta = {
            "quick": args.quick,
            "args": "".join(" " + a for a in self.argv),
            "started": self.started,
            "finished": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()) if complete else
            "not finished (%d of %d cells)" % (sum(1 for c in cells if c.status in ("PASS", "FAIL", "SKIPPED")),
                                               len(cells)),
            "complete": complete,
            "elapsed_s": round(time.time() - self.start, 1),
            "host": host_desc(),
            "jobs": args.jobs,
            "machine": machine(),
            "git": self.git,
        }
        if interrupted:
            meta["interrupted"] = True
        if shard:
            meta["shard"] = {"spec": "%d/%d" % shard["spec"], "timings": shard["split_by"],
                             "split": shard["split_id"]}
            meta["selection"] = shard["selection"]
        if args.remote_cache:
            meta["remote_cache"] = dict(self.runner.remote_total, url=args.remote_cache)
        return meta

    def write(self, complete, interrupted=False):
        meta = self.meta(complete, interrupted)
        write_json(self.cells, meta, self.staging)
        write_md(self.cells, meta, self.staging)
        write_html(self.cells, meta, self.staging)


def run_cells(args, argv, cells, final, shard=None):
    """Runs cells into final (a previous report or nothing); shard: None or
    {"spec": (K, N), "selection": [names], "split_by": text, "split_id": digest}.
    Returns the exit status: 0 iff no cell FAILED; 130 (os._exit) on Ctrl-C."""
    start = time.time()
    staging = staging_dir(final)
    configs = bazelrc_configs()
    print("ci/matrix: %d cells%s%s, --jobs %d; logs in %s/" % (
        len(cells), " (--quick)" if args.quick else "",
        " (shard %d/%d of %d, split by %s)" % (shard["spec"] + (len(shard["selection"]), shard["split_by"]))
        if shard else "", args.jobs, shown(os.path.join(staging, "logs"))), flush=True)
    deps_out = install_deps(cells, configs, os.path.join(staging, "logs")) if not args.no_deps and cells else ""

    runner = Runner(cells, args.jobs, staging)
    runner.remote = args.remote_cache
    report = RunReport(args, argv, cells, start, shard, runner, staging)
    runner.report = lambda: report.write(complete=False)
    report.write(complete=False)

    def interrupted(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)
    work = os.path.join(staging, "work")
    try:
        bazel_cells, lang_cells = sort_out(runner, cells, configs, deps_out, args.no_deps)
        single_dir = os.path.join(work, "single_header")
        core_srcs = prepare_lang(runner, lang_cells, single_dir) if lang_cells else []
        run_lanes(runner, bazel_cells, lang_cells if core_srcs else [], args.jobs, single_dir, core_srcs)
    except KeyboardInterrupt:
        # the main thread may have been interrupted holding the lock (a SKIPPED cell)
        got = runner.lock.acquire(timeout=5)
        report.write(complete=False, interrupted=True)
        if got:
            runner.lock.release()
        print("\nci/matrix: interrupted; the partial report is in %s/report.{md,json,html}, the previous "
              "complete report (if any) stays in %s/" % (shown(staging), shown(final)), flush=True)
        n = counts(cells)
        print("%d passed, %d failed, %d skipped" % (n["PASS"], n["FAIL"] + 1, n["SKIPPED"]), flush=True)
        os._exit(130)
    shutil.rmtree(work, ignore_errors=True)

    elapsed = time.time() - start
    with runner.lock:
        runner.report = None
    report.write(complete=True)
    publish(final, staging)
    n = counts(cells)
    print("ci/matrix: %d cells in %s: %d PASS, %d FAIL, %d SKIPPED; report: %s/report.{md,json,html}" % (
        len(cells), fmt_dur(elapsed), n["PASS"], n["FAIL"], n["SKIPPED"], shown(final)))
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
