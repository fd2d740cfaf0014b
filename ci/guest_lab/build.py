"""The programs a guest runs, cross-compiled statically: tickclock-probe,
tkc-events (tests/guest/life_events.c) and the doctest suites of SUITES;
each cached by a digest of the compilers, flags and every source."""

import glob
import hashlib
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor

from .common import CACHE, ROOT, Fail, log, sh
from .guest_table import PROBE_TARGETS, SUITES


def sources():
    # the core and the tools library the probe links (src/tools)
    lib = sorted(glob.glob(os.path.join(ROOT, "src/tickclock/*.c")) +
                 glob.glob(os.path.join(ROOT, "src/tools/*.c")))
    probe = sorted(glob.glob(os.path.join(ROOT, "src/probe/*.cc")))
    headers = sorted(glob.glob(os.path.join(ROOT, "src/tickclock/*.h")) +
                     glob.glob(os.path.join(ROOT, "src/tickclock/arch/*.h")) +
                     glob.glob(os.path.join(ROOT, "src/tools/*.h")) +
                     glob.glob(os.path.join(ROOT, "src/probe/*.h")))
    return lib, probe, headers, os.path.join(ROOT, "tests/guest/life_events.c")


def build_digest(cc, cxx, flags, files):
    """What a cached build depends on: the two compilers' versions (each
    must be installed), the flags, and every file's name and content."""
    h = hashlib.sha256()
    for tool in (cc, cxx):
        path = shutil.which(tool)
        if not path:
            raise Fail("%s not installed (ci/deps guest installs the cross compilers)" % tool)
        h.update(sh([path, "--version"])[1].encode())
    h.update(repr(flags).encode())
    for f in files:
        h.update(f.encode())
        with open(f, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:16]


CFLAGS = ["-O2", "-std=c99", "-D_GNU_SOURCE", "-pthread"]
CXXFLAGS = ["-O2", "-std=c++17", "-pthread"]


def build(name, cc, cxx):
    """Static tickclock-probe and tkc-events for one target; cached by a
    digest of the compilers, flags and every source."""
    lib, probe, headers, events = sources()
    digest = build_digest(cc, cxx, (CFLAGS, CXXFLAGS), lib + probe + headers + [events])
    d = os.path.join(CACHE, "build", name)
    outs = {"probe": os.path.join(d, "tickclock-probe"), "events": os.path.join(d, "tkc-events"),
            "digest": digest}
    stamp = os.path.join(d, "digest")
    if os.path.exists(stamp) and open(stamp).read() == digest and all(
            os.path.exists(outs[k]) for k in ("probe", "events")):
        return outs
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "obj"))
    inc = ["-I" + os.path.join(ROOT, "src/tickclock"), "-I" + os.path.join(ROOT, "src/tools")]
    jobs = []
    for f in lib:
        jobs.append([cc] + CFLAGS + inc + ["-c", f, "-o", os.path.join(d, "obj", os.path.basename(f) + ".o")])
    for f in probe:
        jobs.append([cxx] + CXXFLAGS + ["-I" + ROOT] + inc +
                    ["-c", f, "-o", os.path.join(d, "obj", "probe_" + os.path.basename(f) + ".o")])
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for (rc, out), argv in zip(pool.map(lambda a: sh(a), jobs), jobs):
            if rc != 0:
                raise Fail("%s: %s failed:\n%s" % (name, " ".join(argv[:1] + argv[-3:]), out[-2000:]))
    libo = [os.path.join(d, "obj", os.path.basename(f) + ".o") for f in lib]
    probeo = [os.path.join(d, "obj", "probe_" + os.path.basename(f) + ".o") for f in probe]
    for argv in ([cxx, "-static", "-pthread"] + probeo + libo + ["-o", outs["probe"]],
                 [cc] + CFLAGS + inc + ["-static", events] + libo + ["-o", outs["events"]]):
        rc, out = sh(argv)
        if rc != 0:
            raise Fail("%s: link failed: %s\n%s" % (name, " ".join(argv[:3]), out[-2000:]))
    shutil.rmtree(os.path.join(d, "obj"))
    with open(stamp, "w") as f:
        f.write(digest)
    return outs


def suites_for(arch):
    """[(name, source, fake, args)] of SUITES for arch."""
    return [(n, src, fake, args) for n, src, fake, args, arches in SUITES if arches is None or arch in arches]


def suite_bin(src):
    """The file name of a suite's binary inside the guest: tkc-<test name>."""
    return "tkc-" + os.path.basename(src)[:-len(".cc")]


DOCTEST_H = "/usr/include/doctest/doctest.h"


def build_suites(arch, cc, cxx):
    """Static doctest binaries of arch's SUITES: {binary name: path}; cached
    by a digest of the compilers, flags and every source."""
    lib, _, headers, _ = sources()
    srcs = sorted(set(src for _, src, _, _ in suites_for(arch)))
    fake_of = dict((src, fake) for _, src, fake, _ in suites_for(arch))
    support = sorted(glob.glob(os.path.join(ROOT, "tests/support/*.h")))
    main_cc = os.path.join(ROOT, "tests/support/doctest_main.cc")
    if not os.path.exists(DOCTEST_H):
        raise Fail("%s missing (doctest-dev: ci/deps)" % DOCTEST_H)
    digest = build_digest(cc, cxx, (CFLAGS, CXXFLAGS, SUITE_FLAGS, srcs, sorted(fake_of.items())),
                          lib + headers + support + [main_cc, DOCTEST_H] +
                          [os.path.join(ROOT, x) for x in srcs])
    d = os.path.join(CACHE, "build", arch + "-suites")
    outs = dict((suite_bin(src), os.path.join(d, suite_bin(src))) for src in srcs)
    stamp = os.path.join(d, "digest")
    if os.path.exists(stamp) and open(stamp).read() == digest and all(os.path.exists(p) for p in outs.values()):
        return outs
    shutil.rmtree(d, ignore_errors=True)
    obj = os.path.join(d, "obj")
    os.makedirs(os.path.join(d, "include"))
    os.makedirs(obj)
    # doctest is header-only and architecture-independent: only its folder
    # goes on the cross compiler's include path, not the host's /usr/include
    os.symlink(os.path.dirname(DOCTEST_H), os.path.join(d, "include", "doctest"))
    inc = ["-I" + ROOT, "-I" + os.path.join(ROOT, "src/tickclock"), "-I" + os.path.join(d, "include")]
    jobs, core = [], {False: [], True: []}
    for fake in sorted(set(fake_of.values())):
        fl = SUITE_FLAGS if fake else []
        for f in lib:
            o = os.path.join(obj, ("fake_" if fake else "") + os.path.basename(f) + ".o")
            core[fake].append(o)
            jobs.append([cc] + CFLAGS + fl + inc + ["-c", f, "-o", o])
    jobs.append([cxx] + CXXFLAGS + inc + ["-c", main_cc, "-o", os.path.join(obj, "doctest_main.o")])
    for src in srcs:
        fl = SUITE_FLAGS if fake_of[src] else []
        jobs.append([cxx] + CXXFLAGS + ["-D_GNU_SOURCE"] + fl + inc +
                    ["-c", os.path.join(ROOT, src), "-o", os.path.join(obj, suite_bin(src) + ".o")])
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for (rc, out), argv in zip(pool.map(lambda a: sh(a), jobs), jobs):
            if rc != 0:
                raise Fail("%s suites: %s failed:\n%s" % (arch, " ".join(argv[:1] + argv[-3:]), out[-2000:]))
    for src in srcs:
        argv = ([cxx, "-static", "-pthread", os.path.join(obj, "doctest_main.o"),
                 os.path.join(obj, suite_bin(src) + ".o")] + core[fake_of[src]] + ["-o", outs[suite_bin(src)]])
        rc, out = sh(argv)
        if rc != 0:
            raise Fail("%s suites: link of %s failed:\n%s" % (arch, suite_bin(src), out[-2000:]))
    shutil.rmtree(obj)
    with open(stamp, "w") as f:
        f.write(digest)
    return outs


# the fake platform's suites: the core compiled in with the fake counter
SUITE_FLAGS = ["-DTICKCLOCK_TEST_FAKE_COUNTER", "-D_GNU_SOURCE"]


def publish_probes(out):
    """Static tickclock-probe for every PROBE_TARGETS architecture, with SHA256SUMS."""
    pd = os.path.join(out, "probes")
    shutil.rmtree(pd, ignore_errors=True)
    os.makedirs(pd)
    lines, failed = [], []
    for name, (cc, cxx) in PROBE_TARGETS.items():
        t = time.time()
        try:
            b = build(name, cc, cxx)
        except Fail as e:
            failed.append((name, str(e).splitlines()[0]))
            log("ci/guest: probe %s: FAIL %s" % (name, str(e).splitlines()[0]))
            continue
        dst = os.path.join(pd, "tickclock-probe-%s" % name)
        shutil.copy(b["probe"], dst)
        with open(dst, "rb") as f:
            lines.append("%s  %s" % (hashlib.sha256(f.read()).hexdigest(), os.path.basename(dst)))
        log("ci/guest: probe %s: %s (%.1fs)" % (name, os.path.relpath(dst, ROOT), time.time() - t))
    with open(os.path.join(pd, "SHA256SUMS"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return failed
