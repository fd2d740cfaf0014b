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
