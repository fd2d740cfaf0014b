"""cross_gcc_toolchain: a Bazel C/C++ toolchain over a Debian cross gcc-12.

Uses @bazel_tools//tools/cpp:unix_cc_toolchain_config.bzl (the config the
auto-configured host toolchain uses) with absolute tool paths under /usr/bin.
Not hermetic on purpose: the compilers and sysroots come from Debian packages
installed by ci/deps-cross, like the host toolchain comes from g++.
"""

load("@bazel_tools//tools/cpp:unix_cc_toolchain_config.bzl", "cc_toolchain_config")

_GCC_VERSION = "12"

def cross_gcc_toolchain(
        name,
        triple,
        target_cpu,
        cpu_constraint,
        multiarch_triple = None,
        extra_compile_flags = [],
        extra_link_flags = []):
    """Declares <name>_config, <name>_cc_toolchain and the toolchain <name>.

    Args:
      name: toolchain name (registered as //toolchains/cross:<name>).
      triple: GNU triple of the Debian cross compiler, e.g. aarch64-linux-gnu.
      target_cpu: Bazel's target_cpu string for this toolchain.
      cpu_constraint: constraint value for target_compatible_with.
      multiarch_triple: Debian multiarch directory name when multiarch
        libraries (libhwy) are installed for this architecture; adds
        -L/usr/lib/<it> so `-lhwy` links the target's libhwy.so, plus the
        include directories those packages use.
      extra_compile_flags: flags for every compile (C and C++).
      extra_link_flags: flags for every link.
    """
    gcc_lib = "/usr/lib/gcc-cross/%s/%s" % (triple, _GCC_VERSION)
    include_dirs = [
        gcc_lib + "/include",
        "/usr/%s/include" % triple,
        "/usr/%s/include/c++/%s" % (triple, _GCC_VERSION),
        "/usr/%s/include/c++/%s/%s" % (triple, _GCC_VERSION, triple),
        "/usr/%s/include/c++/%s/backward" % (triple, _GCC_VERSION),
        # Debian's cross gcc also searches /usr/include (arch-independent
        # headers: hwy/, doctest/); the sysroot's libc headers come first.
        "/usr/include",
    ]
    link_flags = [
        "-pthread",
        "-Wl,-no-as-needed",
        "-Wl,-z,relro,-z,now",
        "-pass-exit-codes",
    ]
    if multiarch_triple:
        include_dirs.append("/usr/include/" + multiarch_triple)
        link_flags += [
            "-L/usr/lib/" + multiarch_triple,
            # libhwy.so's own DT_NEEDED (libstdc++, libgcc_s, libc) resolve
            # from the cross sysroot at link time.
            "-Wl,-rpath-link,/usr/%s/lib" % triple,
        ]
    link_flags += extra_link_flags

    tool = "/usr/bin/%s-" % triple
    cc_toolchain_config(
        name = name + "_config",
        cpu = target_cpu,
        compiler = "gcc",
        toolchain_identifier = "cross-gcc-" + triple,
        host_system_name = "x86_64-linux-gnu",
        target_system_name = triple,
        target_libc = "glibc",
        abi_version = "gcc-" + _GCC_VERSION,
        abi_libc_version = "glibc",
        cxx_builtin_include_directories = include_dirs,
        tool_paths = {
            "ar": tool + "ar",
            "cpp": tool + "cpp",
            "dwp": tool + "dwp",
            "gcc": tool + "gcc",
            "gcov": tool + "gcov",
            "ld": tool + "ld",
            "nm": tool + "nm",
            "objcopy": tool + "objcopy",
            "objdump": tool + "objdump",
            "strip": tool + "strip",
            # unix_cc_toolchain_config.bzl in Bazel 4.2.3 reads this key
            # unconditionally; there is no cross llvm-cov, coverage is host-only.
            "llvm-cov": "/bin/false",
        },
        compile_flags = [
            "-fPIC",
            "-pthread",
            "-U_FORTIFY_SOURCE",
            "-fstack-protector",
            "-fno-omit-frame-pointer",
        ] + extra_compile_flags,
        # C++ only (C compiles get --conlyopt=-std=c99 from .bazelrc).
        cxx_flags = ["-std=c++17"],
        dbg_compile_flags = ["-g"],
        opt_compile_flags = [
            "-g0",
            "-O2",
            "-D_FORTIFY_SOURCE=1",
            "-DNDEBUG",
            "-ffunction-sections",
            "-fdata-sections",
        ],
        link_flags = link_flags,
        link_libs = ["-lstdc++", "-lm"],
        opt_link_flags = ["-Wl,--gc-sections"],
        unfiltered_compile_flags = [
            "-fno-canonical-system-headers",
            "-Wno-builtin-macro-redefined",
            "-D__DATE__=\"redacted\"",
            "-D__TIMESTAMP__=\"redacted\"",
            "-D__TIME__=\"redacted\"",
        ],
        coverage_compile_flags = ["--coverage"],
        coverage_link_flags = ["--coverage"],
        supports_start_end_lib = False,
    )

    native.filegroup(name = name + "_empty", srcs = [])

    native.cc_toolchain(
        name = name + "_cc_toolchain",
        all_files = ":" + name + "_empty",
        ar_files = ":" + name + "_empty",
        as_files = ":" + name + "_empty",
        compiler_files = ":" + name + "_empty",
        dwp_files = ":" + name + "_empty",
        linker_files = ":" + name + "_empty",
        objcopy_files = ":" + name + "_empty",
        strip_files = ":" + name + "_empty",
        supports_param_files = 1,
        toolchain_config = ":" + name + "_config",
        toolchain_identifier = "cross-gcc-" + triple,
    )

    native.toolchain(
        name = name,
        exec_compatible_with = [
            "@platforms//os:linux",
            "@platforms//cpu:x86_64",
        ],
        target_compatible_with = [
            "@platforms//os:linux",
            cpu_constraint,
        ],
        toolchain = ":" + name + "_cc_toolchain",
        toolchain_type = "@bazel_tools//tools/cpp:toolchain_type",
    )
