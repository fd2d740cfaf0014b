"""The initramfs: busybox, the static programs, the suites' list and init.sh
(the guest's init, a file beside this one)."""

import glob
import hashlib
import os
import shutil
import subprocess

from .build import suite_bin, suites_for
from .common import CACHE, VALIDATE_SECONDS, Fail
from .guest_table import ARCHES, SUITE_TCG_EXCLUDE

INIT_SH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "init.sh")


def suite_args(name, args):
    """A suite's doctest arguments in a TCG guest: SUITE_TCG_EXCLUDE's cases left out."""
    ex = [case for case, _ in SUITE_TCG_EXCLUDE.get(name, [])]
    # doctest splits the filter list at commas: the names are cut there
    return list(args) + (["--test-case-exclude=" + ",".join(c.split(",")[0] + "*" for c in ex)] if ex else [])


def suites_list(arch):
    """/suites of the initramfs: one line per suite (name, binary, arguments);
    SUITE_TCG_EXCLUDE applies in every guest with suites (all run under TCG)."""
    return "".join("%s %s %s\n" % (n, suite_bin(src), " ".join("'%s'" % a for a in suite_args(n, args)))
                   for n, src, _, args in suites_for(arch))


def initramfs(arch, fetched, built):
    a = ARCHES[arch]
    h = hashlib.sha256()
    suites = built.get("suites") or {}
    for f in [fetched["busybox"], built["probe"], built["events"]] + [suites[k] for k in sorted(suites)]:
        with open(f, "rb") as fh:
            h.update(fh.read())
    with open(INIT_SH) as f:
        init = f.read().replace("@SECONDS@", VALIDATE_SECONDS)
    h.update(init.encode())
    h.update(suites_list(arch).encode())
    digest = h.hexdigest()[:16]
    path = os.path.join(CACHE, a["debarch"], "initrd-%s.gz" % digest)
    if os.path.exists(path):
        return path
    for old in glob.glob(os.path.join(CACHE, a["debarch"], "initrd-*.gz")):
        os.unlink(old)
    tree = os.path.join(CACHE, a["debarch"], "initramfs")
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(os.path.join(tree, "bin"))
    shutil.copy(fetched["busybox"], os.path.join(tree, "bin/busybox"))
    shutil.copy(built["probe"], os.path.join(tree, "bin/tickclock-probe"))
    shutil.copy(built["events"], os.path.join(tree, "bin/tkc-events"))
    with open(os.path.join(tree, "init"), "w") as f:
        f.write(init)
    for name, built_path in suites.items():
        shutil.copy(built_path, os.path.join(tree, "bin", name))
        os.chmod(os.path.join(tree, "bin", name), 0o755)
    with open(os.path.join(tree, "suites"), "w") as f:
        f.write(suites_list(arch) if suites else "")
    for f in ("bin/busybox", "bin/tickclock-probe", "bin/tkc-events", "init"):
        os.chmod(os.path.join(tree, f), 0o755)
    tmp = path + ".tmp"
    rc = subprocess.call("find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -1 > %s" % tmp,
                         shell=True, cwd=tree)
    if rc != 0:
        raise Fail("cpio/gzip of the initramfs failed (exit %d)" % rc)
    os.rename(tmp, path)
    shutil.rmtree(tree)
    return path
