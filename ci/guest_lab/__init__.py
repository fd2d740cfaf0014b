"""The guest lab (ci/guest): tickclock under Debian's own kernels in QEMU
system emulation. One module per job:

  guest_table.py  the one table: architectures, guests, suites, expectations
  common.py       paths, deadlines, log, Fail, sh
  fetch.py        kernels and busybox from the Debian archive
  build.py        the static probe, tkc-events and the suites, cross-compiled
  initramfs.py    the initramfs around init.sh (the guest's busybox init)
  console.py      QEMU's command line and its serial console, read with deadlines
  qmp.py          the QMP client the life events drive QEMU with
  items.py        what a run is made of: a guest's checks, suites, events
  probe_checks.py the checks boot and its verdict, the x86 fixtures
  suites.py       the suites boot and each suite's verdict
  events.py       a life event driven over QMP and its verdict
  kvm.py          whether a KVM guest boots here at all
  cli.py          the command line: select, prepare, run, report
"""
