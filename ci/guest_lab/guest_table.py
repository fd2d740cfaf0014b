"""The guests of ci/guest: the one file to edit to add a guest, a kernel
parameter, a CPU model or a KVM personality.

ARCHES says how to boot an architecture (QEMU binary, machine, console,
which Debian kernel package, which cross compiler builds its static
programs). GUESTS lists the guests: each is an architecture plus the
differences (CPU model, -smp, kernel parameters, accelerator, extra QEMU
flags), the expectation that must hold inside it and the life events run
in it. A guest passes only when tickclock chose `expect.source` with
`expect.method` there AND `tickclock-probe validate` exited with
`expect.validate_rc`. A guest with suites=True also gets the item
GUEST:suites, which runs the SUITES below inside it.

Expectations are what the decision policy should produce in that guest,
confirmed by booting it; change one only with the boot that shows why.
"""

# Architecture -> how to boot it. kernel_pkg: the Debian metapackage (its
# versioned dependency is downloaded); kernel: the file inside the package.
ARCHES = {
    "x86_64": {
        "debarch": "amd64", "qemu": "qemu-system-x86_64", "machine": ["-M", "pc"], "mem": 512,
        "console": "ttyS0", "kernel_pkg": "linux-image-cloud-amd64", "kernel": "boot/vmlinuz-*",
        "cc": "gcc", "cxx": "g++",
    },
    "aarch64": {
        "debarch": "arm64", "qemu": "qemu-system-aarch64", "machine": ["-M", "virt"], "mem": 512,
        "console": "ttyAMA0", "kernel_pkg": "linux-image-arm64", "kernel": "boot/vmlinuz-*",
        "cc": "aarch64-linux-gnu-gcc", "cxx": "aarch64-linux-gnu-g++",
    },
    "ppc64le": {
        "debarch": "ppc64el", "qemu": "qemu-system-ppc64", "machine": ["-M", "pseries"], "mem": 1024,
        "console": "hvc0", "kernel_pkg": "linux-image-powerpc64le", "kernel": "boot/vmlinux-*",
        "cc": "powerpc64le-linux-gnu-gcc", "cxx": "powerpc64le-linux-gnu-g++",
    },
    "s390x": {
        "debarch": "s390x", "qemu": "qemu-system-s390x", "machine": ["-M", "s390-ccw-virtio"], "mem": 1024,
        "console": "ttysclp0", "kernel_pkg": "linux-image-s390x", "kernel": "boot/vmlinuz-*",
        "cc": "s390x-linux-gnu-gcc", "cxx": "s390x-linux-gnu-g++",
    },
    "riscv64": {
        "debarch": "riscv64", "qemu": "qemu-system-riscv64", "machine": ["-M", "virt"], "mem": 512,
        "console": "ttyS0", "kernel_pkg": None,
        "no_kernel": "Debian 12 has no riscv64 kernel (riscv64 is not a release architecture)",
        "cc": "riscv64-linux-gnu-gcc", "cxx": "riscv64-linux-gnu-g++",
    },
}

# Static tickclock-probe binaries (ci/guest --probes, and every full run):
# architecture -> C and C++ cross compilers. The guests' own come from ARCHES.
PROBE_TARGETS = {
    "x86_64": ("gcc", "g++"),
    "aarch64": ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++"),
    "ppc64le": ("powerpc64le-linux-gnu-gcc", "powerpc64le-linux-gnu-g++"),
    "s390x": ("s390x-linux-gnu-gcc", "s390x-linux-gnu-g++"),
    "riscv64": ("riscv64-linux-gnu-gcc", "riscv64-linux-gnu-g++"),
    "armv7": ("arm-linux-gnueabihf-gcc", "arm-linux-gnueabihf-g++"),
    "i686": ("i686-linux-gnu-gcc", "i686-linux-gnu-g++"),
}

# The test suites a guest with suites=True runs (its item GUEST:suites: one
# boot that runs them all, each a check with its own verdict). Each is a
# doctest binary ci/guest links statically with the architecture's cross
# compiler: name -> (source, fake, doctest arguments, architectures).
# fake: the core compiled in with -DTICKCLOCK_TEST_FAKE_COUNTER (the fake
# platform's suites, tests/reliability: the architecture's own fake counter,
# deterministic, the guest kernel only runs them); else the real library on
# the guest's kernel. Architectures None: every one.
SUITES = [
    ("fake_platform", "tests/reliability/fake_platform_test.cc", True, ["--test-suite-exclude=x86"], None),
    ("fake_platform_x86", "tests/reliability/fake_platform_test.cc", True, ["--test-suite=x86"], ["x86_64"]),
    ("published_freq", "tests/reliability/published_freq_test.cc", True, ["--test-suite-exclude=x86"], None),
    ("published_freq_x86", "tests/reliability/published_freq_test.cc", True, ["--test-suite=x86"], ["x86_64"]),
    ("suspend", "tests/reliability/suspend_test.cc", True, ["--test-suite-exclude=x86"], None),
    ("suspend_x86", "tests/reliability/suspend_test.cc", True, ["--test-suite=x86"], ["x86_64"]),
    ("duration_fake", "tests/reliability/duration_fake_test.cc", True, ["--test-suite-exclude=x86"], None),
    ("duration_fake_x86", "tests/reliability/duration_fake_test.cc", True, ["--test-suite=x86"], ["x86_64"]),
    ("history", "tests/reliability/history_test.cc", True, [], None),
    ("transitions", "tests/tickclock/transitions_test.cc", False, [], None),
    # the real library on the guest's kernel, x86 only (tests/support/host_facts.h
    # reads CPUID): inside a guest the facts it reads are the guest's, where
    # TCG offers no invariant TSC, so its cases that need the TSC chosen say
    # why they skip and the rest run with signals and system calls as dear as
    # TCG makes them (a slow host, whatever machine runs the lab)
    ("life_events", "tests/reliability/life_events_test.cc", False, [], ["x86_64"]),
]

# Cases of a suite that cannot hold under TCG, each with the measurement
# that shows why: excluded there (doctest --test-case-exclude), and the
# suite's check lists them with the reason; they still run everywhere else.
SUITE_TCG_EXCLUDE = {
    "transitions": [
        ("a signal handler during an initialisation reads the system clock and gets EBUSY",
         "its 1 ms bound between a handler's read and the system call after it: under TCG the emulated "
         "interrupt and signal paths take milliseconds (worst 3.9 ms in x86_64-max, 2.3 ms in aarch64-max)"),
        ("an interval spanning tickclock_init(SYSTEM) and back is within 2 ms of the reference",
         "its 2 ms bound on a 190 ms interval read against system calls: 9.9 ms off in aarch64-max under "
         "TCG on a loaded 2-core host (50 us in x86_64-max)"),
    ],
}

# Expectations, named once. method: the report's frequency.method (the
# precise rule, tickclock_info.freq_detail).
TCG_X86 = {"source": "system", "method": "identity", "validate_rc": 0,
           "why": "TCG has no invariant-TSC bit: the TSC is refused, the OS clock is used"}
VIRT_ARM = {"source": "cntvct", "method": "cntfrq_el0", "hz": 62500000, "validate_rc": 0,
            "why": "the virtual counter at CNTFRQ_EL0 (62.5 MHz on QEMU virt)"}
PSERIES = {"source": "timebase", "method": "cpuinfo_timebase", "hz": 512000000, "validate_rc": 0,
           "why": "the POWER timebase at the frequency the kernel reports (512 MHz)"}
S390 = {"source": "tod", "method": "tod_architecture", "hz": 4096000000, "validate_rc": 0,
        "why": "the TOD clock: bit 51 = 1 us, 4096 MHz by architecture"}
KVM_INVTSC = {"source": "tsc", "method": None, "validate_rc": 0,
              "why": "KVM with +invtsc: invariant TSC, the TSC"}

# Life events: x86 gets all of them, aarch64 the ones its machine supports.
# "EVENT@SOURCE": the same with TICKCLOCK_SOURCE=SOURCE (the TSC forced where
# TCG's missing invariant-TSC bit makes the policy refuse it).
X86_EVENTS = ["pause", "s3", "migrate", "clocksource", "pr_set_tsc",
              "pause@tsc", "s3@tsc", "migrate@tsc", "clocksource@tsc", "pr_set_tsc@tsc"]
ARM_EVENTS = ["pause", "s3", "migrate"]


# An event the machine cannot do, as measured: when it fails exactly so (the
# guest never suspends, so nothing resumes it) the item is SKIPPED with this
# reason and the measurement; if it ever works, it is judged like any other.
ARM_EVENT_LIMITS = {
    "s3": "QEMU virt (aarch64) has no ACPI S3: the guest kernel's 'mem' is s2idle, which QMP system_wakeup "
          "cannot wake",
}


def G(name, arch, expect, cpu=None, smp=1, append="", accel="tcg", qemu_args=None, events=None,
      quick=False, event_limits=None, suites=False):
    return {"name": name, "arch": arch, "expect": expect, "cpu": cpu, "smp": smp, "append": append,
            "accel": accel, "qemu_args": qemu_args or [], "events": events or [], "quick": quick,
            "event_limits": event_limits or {}, "suites": suites}


GUESTS = [
    # x86-64 under TCG: CPU models and kernel parameters
    G("x86_64-max", "x86_64", TCG_X86, cpu="max", events=X86_EVENTS, quick=True, suites=True),
    G("x86_64-qemu64", "x86_64", TCG_X86, cpu="qemu64"),
    G("x86_64-max-smp2", "x86_64", TCG_X86, cpu="max", smp=2),
    # the kernel told not to use the TSC, as on a host whose hypervisor marks
    # it unstable: the suites run here too, so the timing tests meet a slow
    # host's costs on any machine (under TCG every signal and system call
    # goes through the emulator, and the clocksource is an emulated device)
    G("x86_64-max-hpet", "x86_64", TCG_X86, cpu="max", append="clocksource=hpet", suites=True),
    G("x86_64-max-acpi_pm", "x86_64", TCG_X86, cpu="max", append="clocksource=acpi_pm", suites=True),
    G("x86_64-max-tsc-unstable", "x86_64", TCG_X86, cpu="max", append="tsc=unstable", suites=True),
    G("x86_64-max-nosmp", "x86_64", TCG_X86, cpu="max", smp=2, append="nosmp"),
    # aarch64 under TCG
    G("aarch64-max", "aarch64", VIRT_ARM, cpu="max", events=ARM_EVENTS, quick=True,
      event_limits=ARM_EVENT_LIMITS, suites=True),
    G("aarch64-cortex-a57", "aarch64", VIRT_ARM, cpu="cortex-a57"),
    G("aarch64-max-smp2", "aarch64", VIRT_ARM, cpu="max", smp=2),
    # the other 64-bit architectures
    G("ppc64le-power9", "ppc64le", PSERIES, cpu="power9", suites=True),
    G("s390x-max", "s390x", S390, cpu="max", suites=True),
    G("riscv64-virt", "riscv64", {"source": "rdtime", "method": None, "validate_rc": 0}, cpu="rv64"),
    # KVM personalities: run only when a KVM guest boots here (ci/guest
    # tries once, with a short deadline, and says so in one line otherwise)
    G("x86_64-kvm-invtsc", "x86_64", KVM_INVTSC, cpu="host,+invtsc", accel="kvm"),
    G("x86_64-kvm-hidden", "x86_64", KVM_INVTSC, cpu="host,+invtsc,kvm=off", accel="kvm"),
    G("x86_64-kvm-vmware-freq", "x86_64", KVM_INVTSC, cpu="host,+invtsc,vmware-cpuid-freq=on", accel="kvm"),
    G("x86_64-kvm-hyperv", "x86_64", KVM_INVTSC,
      cpu="host,+invtsc,hv-relaxed,hv-vapic,hv-time,hv-frequencies,hv-reenlightenment", accel="kvm"),
    G("x86_64-kvm-tsc-frequency", "x86_64", KVM_INVTSC, cpu="host,+invtsc,tsc-frequency=2000000000",
      accel="kvm"),
]
