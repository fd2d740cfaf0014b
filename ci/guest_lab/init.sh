#!/bin/busybox sh
# The init of every guest of ci/guest (the initramfs's /init, busybox's sh).
# The kernel parameter tkc.run= says what this boot does: checks (the
# probe's report, validate and on x86 its fixture and CPUID dump), ev:EVENT
# or ev:EVENT@SOURCE (tkc-events across a life event the host drives over
# QMP), suites (each line of /suites: name, binary, doctest arguments) or
# probe (only reach init). Results go to the serial console between
# ==TKC-BEGIN name== and ==TKC-END name rc=N== lines; ci/guest reads them.
# @SECONDS@ is replaced when the initramfs is made.
/bin/busybox mkdir -p /proc /sys /dev /tmp /usr/bin /usr/sbin /sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
RUN=checks
for a in $(cat /proc/cmdline); do
  case "$a" in tkc.run=*) RUN="${a#tkc.run=}" ;; esac
done
echo "==TKC-BOOTED== $(cat /proc/uptime)"
section() {
  name=$1; shift
  echo "==TKC-BEGIN $name=="
  "$@"
  rc=$?
  echo ""
  echo "==TKC-END $name rc=$rc=="
}
case "$RUN" in
  checks)
    section uname uname -a
    section clocksource cat /sys/devices/system/clocksource/clocksource0/current_clocksource \
      /sys/devices/system/clocksource/clocksource0/available_clocksource
    section report /bin/tickclock-probe --json
    if [ "$(uname -m)" = x86_64 ]; then
      section validate /bin/tickclock-probe validate --seconds @SECONDS@ --json --fixture-out /tmp/fixture
      section fixture cat /tmp/fixture
      section cpuid /bin/tickclock-probe cpuid --dump
    else
      section validate /bin/tickclock-probe validate --seconds @SECONDS@ --json
    fi
    ;;
  ev:*)
    # the events start once the kernel has settled on its clocksource: x86
    # kernels run on tsc-early for the first seconds, then rename it tsc,
    # which tickclock_revalidate() takes for a clocksource change
    cs=/sys/devices/system/clocksource/clocksource0/current_clocksource
    i=0
    while [ "$(cat $cs)" = tsc-early ] && [ $i -lt 50 ]; do usleep 200000; i=$((i+1)); done
    section power cat /sys/power/state /sys/power/mem_sleep $cs
    ev="${RUN#ev:}"
    case "$ev" in
      *@*) export TICKCLOCK_SOURCE="${ev#*@}"; ev="${ev%@*}" ;;
    esac
    section event /bin/tkc-events "$ev" 0.5 2
    ;;
  suites)
    # one line per suite: name, binary, doctest arguments
    while read -r suite bin args; do
      eval "section suite:$suite /bin/$bin --no-colors=true $args"
      echo "==TKC-UPTIME suite:$suite $(cut -d' ' -f1 /proc/uptime)=="
    done < /suites
    ;;
  probe) ;;
esac
echo "==TKC-DONE=="
poweroff -f
