"""Kernels and busybox from the Debian archive, once per architecture."""

import glob
import json
import os
import re
import shutil
import subprocess

from .common import CACHE, Fail, log, sh
from .guest_table import ARCHES


def fetch(arch):
    """{kernel, busybox, kernel_version} for arch, downloaded once into .cache/guest/<debarch>/."""
    a = ARCHES[arch]
    d = os.path.join(CACHE, a["debarch"])
    done = os.path.join(d, "fetched.json")
    if os.path.exists(done):
        with open(done) as f:
            got = json.load(f)
        if all(os.path.exists(os.path.join(d, got[k])) for k in ("kernel", "busybox")):
            return dict((k, os.path.join(d, v) if k in ("kernel", "busybox") else v) for k, v in got.items())
    os.makedirs(d, exist_ok=True)
    native = a["debarch"] == "amd64"
    sfx = "" if native else ":" + a["debarch"]
    rc, out = sh(["apt-cache", "depends", "--no-recommends", "--no-suggests", a["kernel_pkg"] + sfx])
    m = re.search(r"Depends: (linux-image-[0-9][^\s:]*)", out)
    if rc != 0 or not m:
        raise Fail("apt-cache depends %s%s: no versioned kernel (%s); run ci/deps guest (adds the "
                   "foreign architecture)" % (a["kernel_pkg"], sfx, out.strip()[:200]))
    kpkg = m.group(1)
    dl = os.path.join(d, "deb")
    shutil.rmtree(dl, ignore_errors=True)
    os.makedirs(dl)
    os.chmod(dl, 0o777)  # apt-get download as root hands the download to _apt
    rc, out = sh(["apt-get", "download", "-q", kpkg + sfx, "busybox-static" + sfx], cwd=dl)
    debs = glob.glob(os.path.join(dl, "*.deb"))
    if rc != 0 or len(debs) != 2:
        raise Fail("apt-get download %s busybox-static%s failed: %s" % (kpkg + sfx, sfx, out.strip()[-300:]))
    x = os.path.join(d, "x")
    shutil.rmtree(x, ignore_errors=True)
    os.makedirs(x)
    for deb in debs:
        # only the kernel and busybox: dpkg-deb's tar stream, the rest skipped
        # (the kernel package's modules are not needed: nothing is loaded)
        want = "./bin/busybox" if "busybox" in os.path.basename(deb) else "./boot/*"
        tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
        rc2 = subprocess.call(["tar", "-x", "-C", x, "--wildcards", want], stdin=tar.stdout)
        tar.stdout.close()
        if tar.wait() != 0 or rc2 != 0:
            raise Fail("dpkg-deb -x %s failed" % deb)
    kern = sorted(glob.glob(os.path.join(x, a["kernel"])))
    kern = [k for k in kern if not k.endswith(".sig")]
    if not kern or not os.path.exists(os.path.join(x, "bin/busybox")):
        raise Fail("%s: no %s or bin/busybox in the packages" % (arch, a["kernel"]))
    shutil.move(kern[0], os.path.join(d, "kernel"))
    shutil.move(os.path.join(x, "bin/busybox"), os.path.join(d, "busybox"))
    shutil.rmtree(x, ignore_errors=True)
    shutil.rmtree(dl, ignore_errors=True)
    got = {"kernel": "kernel", "busybox": "busybox", "kernel_version": kpkg[len("linux-image-"):],
           "packages": [os.path.basename(p) for p in debs]}
    with open(done, "w") as f:
        json.dump(got, f)
    log("ci/guest: %s: fetched %s and busybox-static%s" % (arch, kpkg + sfx, sfx))
    return fetch(arch)
