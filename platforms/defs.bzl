"""Starlark constants for targets that depend on what a platform provides.

See the comment at the top of //platforms:BUILD.
"""

# For target_compatible_with of anything that links Highway (@system_usr//:hwy):
# SKIPPED on platforms marked //platforms:highway_no (armv7, riscv64, i686,
# mips64el), compatible everywhere else, including the auto-detected host.
HIGHWAY_COMPATIBLE = select({
    "//platforms:no_highway": ["//platforms:incompatible"],
    "//conditions:default": [],
})

# Platforms that have Highway (kept in sync with //platforms:BUILD).
HIGHWAY_PLATFORMS = [
    "//platforms:linux_x86_64",
    "//platforms:linux_aarch64",
    "//platforms:linux_ppc64le",
    "//platforms:linux_s390x",
]

# Bazel's view of the target architecture, for select(): arch name ->
# config_setting in //platforms (the auto-detected host matches x86_64).
ARCH_CONFIG_SETTINGS = {
    "x86_64": "//platforms:cpu_x86_64",
    "aarch64": "//platforms:cpu_aarch64",
    "armv7": "//platforms:cpu_armv7",
    "ppc64le": "//platforms:cpu_ppc64le",
    "s390x": "//platforms:cpu_s390x",
    "riscv64": "//platforms:cpu_riscv64",
    "i686": "//platforms:cpu_i686",
    "mips64el": "//platforms:cpu_mips64el",
}

# local_defines giving the target architecture as Bazel resolved it from
# --platforms: TICKCLOCK_TARGET_ARCH="aarch64" etc. Lets a test check that the
# compiler really targets what the platform says.
TARGET_ARCH_DEFINES = select({
    # Bourne-shell tokenized by Bazel: the escaped quotes survive.
    setting: ['TICKCLOCK_TARGET_ARCH=\\"%s\\"' % arch]
    for arch, setting in ARCH_CONFIG_SETTINGS.items()
})

# For anything that links a system library only the host has (from
# @system_usr: libbenchmark; libabsl): ci/deps-cross installs no copies of them
# for other architectures, so such targets are SKIPPED on every cross target.
HOST_ONLY_COMPATIBLE = select({
    "//platforms:linux_x86_64_setting": [],
    "//conditions:default": ["//platforms:incompatible"],
})

# For cases about x86 facts (CPUID leaves, PR_SET_TSC, the perf page's TSC
# conversion) on Linux: x86-64 (the host) and i686; SKIPPED on every other
# ISA, which has none of them, and on --config=windows.
X86_LINUX_COMPATIBLE = ["@platforms//os:linux"] + select({
    "//platforms:cpu_x86_64": [],
    "//platforms:cpu_i686": [],
    "//conditions:default": ["//platforms:incompatible"],
})

# Targets that use Linux interfaces (sysfs, sched_getaffinity, prctl, dup2,
# setenv, CLOCK_MONOTONIC_RAW): SKIPPED on --config=windows.
LINUX_ONLY = ["@platforms//os:linux"]
