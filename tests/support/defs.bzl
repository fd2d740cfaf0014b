"""Test macros: the cc_test stanzas the suites share, written once."""

load("//platforms:defs.bzl", "HOST_ONLY_COMPATIBLE")

def doctest_test(name, srcs, deps = ["//src/tickclock:internal"], size = "small", **kwargs):
    """A doctest suite linked with doctest's main().

    deps defaults to the core with its internal headers (what most suites
    test); pass deps explicitly for the public library or other code.
    """
    native.cc_test(
        name = name,
        srcs = srcs,
        size = size,
        deps = deps + ["//tests/support:doctest_main"],
        **kwargs
    )

def core_compiled_in_test(name, srcs, copts = [], deps = [], **kwargs):
    """A doctest suite with the core's sources compiled into the test binary.

    For flags that must reach the core itself (-fsanitize=thread, the fake
    counter of -DTICKCLOCK_TEST_FAKE_COUNTER), which a dependency on the
    prebuilt //src/tickclock library would not carry.
    """
    doctest_test(
        name = name,
        srcs = srcs + ["//src/tickclock:core_files"],
        copts = copts + ["-D_GNU_SOURCE", "-Isrc/tickclock"],
        deps = deps,
        **kwargs
    )

def tsan_test(name, srcs, **kwargs):
    """core_compiled_in_test under ThreadSanitizer (gcc's libtsan).

    Tagged "tsan": its own -fsanitize=thread cannot be combined with
    --config=asan, and TSan needs the real 64-bit address-space layout that
    QEMU user mode does not give it (.bazelrc filters the tag there). Host
    only: libtsan is not installed for the cross sysroots, and gcc has no
    TSan for armv7, i686 or mips64el at all.
    """
    core_compiled_in_test(
        name = name,
        srcs = srcs,
        copts = ["-fsanitize=thread"],
        linkopts = ["-fsanitize=thread", "-pthread"],
        tags = ["tsan"],
        target_compatible_with = HOST_ONLY_COMPATIBLE,
        **kwargs
    )
