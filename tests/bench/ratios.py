#!/usr/bin/python3
"""Turn micro_bench's Google Benchmark JSON and executor_bench's JSON into
the issue-7 ratio table (stdlib only).

Every figure is ns per operation: cpu_time / ops_per_iter of each
repetition (process CPU time: other tenants of this shared machine are left
out), the fastest repetition (the median is also kept in the JSON). Each is
divided by a baseline measured in the same run: bare RDTSC for reads,
PostgreSQL 19's scheme at the same uptime for conversion, the scalar loop
for batch kernels, the untimed pipeline for the executor.

usage: ratios.py bench.json executor.json ratios.json
"""
import json
import os
import statistics
import sys


def load_micro(path):
    with open(path) as f:
        doc = json.load(f)
    reps, errors = {}, {}
    for b in doc.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue
        name = b.get("run_name", b["name"])
        if b.get("error_occurred"):
            errors[name] = b.get("error_message", "error")
            continue
        unit = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        ops = b.get("ops_per_iter", 1.0) or 1.0
        reps.setdefault(name, []).append(b["cpu_time"] * unit / ops)
    # The figure is the fastest repetition: on a shared, noisy machine the
    # minimum is the least disturbed estimate of the intrinsic cost.
    figs = {n: {"ns": min(v), "median_ns": statistics.median(v), "reps": len(v)}
            for n, v in reps.items()}
    return doc.get("context", {}), figs, errors


def paths(out_dir, out_json):
    """ratios.py --paths DIR OUT: tickclock_now() on each read path
    (path_bench, one process per path) against that process's own bare
    RDTSC, vDSO clock_gettime and system-call clock_gettime."""
    table = {}
    print("  %-15s %10s %10s %10s %10s %12s %12s" % ("path", "now ns", "/rdtsc", "/vdso", "/syscall",
                                                  "now+to_ns ns", "/vdso"))
    for p in ("counter", "system", "os_mapped", "counter_mapped", "os_syscall"):
        f = os.path.join(out_dir, "path_%s.json" % p)
        if not os.path.exists(f):
            print("  %-15s %10s" % (p, "not run"))
            continue
        _, figs, _ = load_micro(f)
        now = figs.get("BM_path/tickclock_now", {}).get("ns")
        base = {k: figs.get("BM_path/" + k, {}).get("ns")
                for k in ("rdtsc", "clock_gettime_vdso", "clock_gettime_syscall")}
        r = {k: (now / v if now and v else None) for k, v in base.items()}
        conv = figs.get("BM_path/tickclock_now_to_ns", {}).get("ns")
        vdso = base["clock_gettime_vdso"]
        rc = conv / vdso if conv and vdso else None
        table[p] = {"now_ns": now, "ratio": r, "now_to_ns_ns": conv, "now_to_ns_vs_vdso": rc}
        fmt = lambda x: "%10.3f" % x if x is not None else "%10s" % "-"
        print("  %-15s %10.2f %s %s %s %12.2f %12s" % (
            p, now or 0, fmt(r["rdtsc"]), fmt(r["clock_gettime_vdso"]),
            fmt(r["clock_gettime_syscall"]), conv or 0, fmt(rc)))
    with open(out_json, "w") as f:
        json.dump(table, f, indent=1)


def main():
    if sys.argv[1] == "--paths":
        paths(sys.argv[2], sys.argv[3])
        return
    bench_json, exec_json, out_json = sys.argv[1:4]
    ctx, figs, errors = load_micro(bench_json)
    ex = None
    if os.path.exists(exec_json):
        with open(exec_json) as f:
            ex = json.load(f)

    def ns(name):
        f = figs.get(name)
        return f["ns"] if f else None

    def ratio(a, b):
        return a / b if (a is not None and b) else None

    rows = []  # (section, name, ns, ratio, baseline-name)
    targets = []  # (what, measured, op, limit)

    def fmt(x, p=3):
        return "n/a" if x is None else f"{x:.{p}f}"

    # ---- reads
    base = ns("BM_read/rdtsc")
    cg = ns("BM_read/clock_gettime_monotonic")
    for name in sorted(n for n in set(figs) | set(errors) if n.startswith("BM_read/")):
        rows.append(("reads", name, ns(name), ratio(ns(name), base), "rdtsc",
                     ratio(ns(name), cg), errors.get(name)))
    now_tsc = ns("BM_read/tickclock_now/tsc")
    now_auto = ns("BM_read/tickclock_now/auto")
    targets.append(("tickclock_now (forced TSC) / bare RDTSC", ratio(now_tsc, base), "<=", 1.05))
    targets.append(("tickclock_now (forced TSC) / clock_gettime(MONOTONIC)", ratio(now_tsc, cg), "<=", 0.62))
    targets.append(("tickclock_now (auto = OS clock here) / clock_gettime(MONOTONIC) [info]",
                    ratio(now_auto, cg), "<=", None))

    # ---- intervals
    for name in sorted(n for n in figs if n.startswith("BM_interval/")):
        one = {"tsc": now_tsc, "auto": now_auto}.get(name.rsplit("/", 1)[-1], cg)
        rows.append(("interval", name, ns(name), ratio(ns(name), one), "one read",
                     ratio(ns(name), base), None))
    targets.append(("interval (2 reads + delta->ns, TSC) / one tickclock_now",
                    ratio(ns("BM_interval/tickclock/tsc"), now_tsc), "<=", 2.1))
    targets.append(("interval (auto) / one tickclock_now (auto) [info]",
                    ratio(ns("BM_interval/tickclock/auto"), now_auto), "<=", None))

    # ---- sampled timing: the decision against the same loop without it
    sb = ns("BM_sampler/baseline")
    for name in sorted(n for n in figs if n.startswith("BM_sampler/")):
        v = ns(name)
        rows.append(("sampler", name, v, ratio(v, sb), "loop without it",
                     (v - sb) if (v is not None and sb is not None) else None, None))
    ns_dec = ns("BM_sampler/not_sampled")
    targets.append(("sampler: deciding 'not timed', ns per decision (not_sampled - baseline)",
                    (ns_dec - sb) if (ns_dec is not None and sb is not None) else None, "<=", 2.0))
    targets.append(("sampler: not_sampled loop / baseline loop [info]", ratio(ns_dec, sb), "<=", None))
    targets.append(("duration_get (2 reads + bounded duration) / interval with delta_ns [info]",
                    ratio(ns("BM_interval/duration_get/tsc"), ns("BM_interval/tickclock/tsc")),
                    "<=", None))

    # ---- tickclock_to_ns through the published state: readings vs ticks ahead
    now_conv = ns("BM_to_ns/tickclock/now")
    up1 = ns("BM_to_ns/tickclock/uptime_1s")
    for a in ["now", "1s", "1y", "100y", "uptime_1s", "uptime_100y"]:
        name = f"BM_to_ns/tickclock/{a}"
        rows.append(("to_ns", name, ns(name),
                     ratio(ns(name), up1 if a.startswith("uptime") else now_conv),
                     "uptime 1 s" if a.startswith("uptime") else "a recent reading",
                     figs.get(name, {}).get("median_ns"), errors.get(name)))
    targets.append(("to_ns at 100 years of uptime / at 1 s (absolute ticks, no slow path)",
                    ratio(ns("BM_to_ns/tickclock/uptime_100y"), up1), "<=", 1.05))
    targets.append(("to_ns of a tick 100 years ahead / of a recent reading",
                    ratio(ns("BM_to_ns/tickclock/100y"), now_conv), "<=", 1.05))
    targets.append(("to_ns of a tick 1 s ahead / of a recent reading [info]",
                    ratio(ns("BM_to_ns/tickclock/1s"), now_conv), "<=", None))
    targets.append(("duration_get to a tick 100 years ahead / of an interval over 2 ms [info]",
                    ratio(ns("BM_interval/duration_get_100y/tsc"),
                          ns("BM_interval/duration_get_long/tsc")), "<=", None))
    for name in ("BM_interval/duration_get/tsc", "BM_interval/duration_get_2threads/tsc/threads:2",
                 "BM_interval/duration_get_long/tsc", "BM_interval/duration_get_100y/tsc"):
        f = figs.get(name)
        targets.append((f"{name.split('/')[2]}: median ns per op [info]",
                        f["median_ns"] if f else None, "<=", None))

    # ---- conversion
    uptimes = ["1s", "3d", "1y", "100y"]
    for scheme in ["tickclock", "pg19", "double"]:
        for u in uptimes:
            name = f"BM_conv/{scheme}/{u}"
            rows.append(("conversion", name, ns(name), ratio(ns(name), ns(f"BM_conv/pg19/{u}")),
                         "pg19 same uptime", ratio(ns(name), ns(f"BM_conv/{scheme}/1s")), None))
    targets.append(("conversion tickclock 100y / tickclock 1s",
                    ratio(ns("BM_conv/tickclock/100y"), ns("BM_conv/tickclock/1s")), "<=", 1.05))
    for u in uptimes:
        targets.append((f"conversion tickclock / PG19 scheme at {u}",
                        ratio(ns(f"BM_conv/tickclock/{u}"), ns(f"BM_conv/pg19/{u}")), "<=", 1.0))

    # ---- batch kernels: speed-up over the scalar loop (higher is better)
    kernels = sorted({n.split("/")[1] for n in figs if n.startswith("BM_batch/")})
    for k in kernels:
        sc = ns(f"BM_batch/{k}/scalar")
        for name in sorted(n for n in figs if n.startswith(f"BM_batch/{k}/")):
            rows.append(("batch", name, ns(name), ratio(ns(name), sc), "scalar loop",
                         ratio(sc, ns(name)), None))
            impl = name.split("/")[2]
            if impl != "scalar" and k.startswith(("ticks_to_ns", "deltas_to_ns")) and \
                    any(t in impl for t in ("AVX2", "AVX3")):
                targets.append((f"batch {k} speed-up over scalar ({impl})",
                                ratio(sc, ns(name)), ">=", 2.0))

    # ---- executor
    if ex:
        for mode, m in ex["modes"].items():
            rows.append(("executor", "executor/" + mode, m["ns_per_row"],
                         ex["overhead"].get(mode), "overhead vs untimed", None, None))
        ov = ex["overhead"]
        targets.append(("executor overhead: tickclock (TSC) / clock_gettime",
                        ratio(ov.get("tickclock"), ov.get("clock_gettime")), "<=", 0.6))
        targets.append((f"executor sampled (1 in {ex['sample_every']}) overhead vs untimed",
                        ov.get("sampled"), "<=", 0.01))
        if "sampled_blocks_over_sampled" in ex:
            # ~12 ns rows over three nodes here: 5 % is ~0.2 ns a node
            # call; measured 1.06-1.14 (about 0.5 ns a node call)
            targets.append(("executor sampled with block counts / sampled, cpu time",
                            ex["sampled_blocks_over_sampled"], "<=", 1.05))
        se = ex["sampled_error"]
        targets.append(("executor sampled estimate error vs full timing, same calls, worst node/rep",
                        se["for_target"], "<=", 0.05))
        targets.append(("  same, median over repetitions [info]",
                        se.get("sampling_error_median_rep"), "<=", None))
        targets.append(("  same, raw (preemptions > %g us kept) [info]" % se["outlier_us"],
                        se["sampling_error_raw_worst"], "<=", None))
        targets.append(("executor full-timing agg total / untimed query time [info]",
                        1 + se["full_agg_vs_untimed_wall_last"], "<=", None))

    # ---- print
    print(f"source chosen automatically: {ctx.get('tickclock_auto_source')} "
          f"({ctx.get('tickclock_auto_why')}); RDTSCP: {ctx.get('rdtscp')}; "
          f"highway targets: {ctx.get('hwy_targets', 'n/a')}")
    print(f"{'benchmark':48s} {'ns/op':>9s} {'ratio':>8s}  {'baseline':20s} {'alt':>8s}")
    sec = None
    for (s, name, v, r, bl, alt, err) in rows:
        if s != sec:
            alt_name = {"reads": "x clock_gettime", "interval": "x rdtsc",
                        "conversion": "x own@1s", "batch": "speed-up",
                        "sampler": "ns over baseline",
                        "to_ns": "median ns",
                        "executor": ""}[s]
            print(f"-- {s} (alt column: {alt_name})")
            sec = s
        if err:
            print(f"{name:48s} {'skipped':>9s}  {err}")
            continue
        if s == "executor":
            print(f"{name:48s} {fmt(v, 2):>9s} {fmt(r if r is None else 100 * r, 1):>7s}%  {bl}")
            continue
        print(f"{name:48s} {fmt(v, 2):>9s} {fmt(r):>8s}  {bl:20s} {fmt(alt):>8s}")
    print("-- targets (ratios from this run; reported, not enforced)")
    verdicts = []
    for (what, v, op, lim) in targets:
        if lim is None:
            verdict = "info"
        elif v is None:
            verdict = "n/a"
        else:
            verdict = "PASS" if (v <= lim if op == "<=" else v >= lim) else "MISS"
        verdicts.append({"target": what, "measured": v, "op": op, "limit": lim, "verdict": verdict})
        print(f"{verdict:5s} {what:70s} {fmt(v):>8s} {op} {'' if lim is None else lim}")
    npass = sum(v["verdict"] == "PASS" for v in verdicts)
    nmiss = sum(v["verdict"] == "MISS" for v in verdicts)
    print(f"targets: {npass} PASS, {nmiss} MISS")

    out = {
        "context": ctx,
        "figures_ns": figs,
        "skipped": errors,
        "rows": [{"section": s, "name": n, "ns": v, "ratio": r, "baseline": bl, "alt": alt,
                  "skipped": err} for (s, n, v, r, bl, alt, err) in rows],
        "targets": verdicts,
        "executor": ex,
    }
    with open(out_json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
