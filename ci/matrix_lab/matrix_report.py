"""The report of ci/matrix: report.md, report.html and report.json from the
cells a run (or a merge of shards) produced. ci/matrix_lab/matrix_run.py,
ci/matrix_lab/matrix_shard.py (--merge) and ci/matrix_lab/matrix_main.py (--rerender) call it with the
output folder."""

import html
import json
import os
import platform

from matrix_cells import HEADERS


def fmt_dur(s):
    s = int(round(s))
    if s < 60:
        return "%ds" % s
    if s < 3600:
        return "%dm%02ds" % (s // 60, s % 60) if s < 600 else "%dm" % (s // 60)
    return "%dh%02dm" % (s // 3600, (s % 3600) // 60)


def machine_brief(m):
    return "%s (%s, %s, %d CPUs), kernel %s, clocksource %s" % (
        m.get("hostname", "?"), m.get("cpu", "?"), m.get("arch", "?"), m.get("cpus", 0),
        m.get("kernel", "?"), m.get("clocksource", "?"))


def shard_lines(meta):
    """Header lines of a report: which machine ran which shard."""
    out = []
    if meta.get("shards"):
        for s in meta["shards"]:
            out.append("shard %s (%d cells, %s, %s): %s" % (
                s["shard"], s["cells"], fmt_dur(s.get("elapsed_s") or 0), s.get("dir", ""),
                machine_brief(s["machine"]) if s.get("machine") else s.get("host", "")))
    elif meta.get("shard"):
        out.append("shard %s of %d selected cells (split by %s): %s" % (
            meta["shard"]["spec"], len(meta.get("selection") or []), meta["shard"].get("timings", "?"),
            machine_brief(meta["machine"]) if meta.get("machine") else meta.get("host", "")))
    rc = meta.get("remote_cache")
    if rc:
        out.append("remote cache %s: %d remote cache hit of %d processes (%d internal) over %d Bazel runs" % (
            rc["url"], rc["hits"], rc["processes"], rc["internal"], rc["bazel_runs"]))
    return out


STATUS_ORDER = {"FAIL": 0, "PASS": 1, "SKIPPED": 2, "RUNNING": 3, "PENDING": 4}


def write_atomic(path, text):
    """A reader (or an interrupted run) sees the old file or the new one,
    never half of one."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def run_lines(meta):
    """Header lines: what was tested (commit, dirty state) and when."""
    out = []
    g = meta.get("git")
    if g:
        if g.get("commit"):
            s = "commit %s%s" % (g["commit"], " (%s)" % g["branch"] if g.get("branch") else "")
            if g.get("dirty"):
                s += ", dirty: %d changed or untracked file(s): %s%s" % (
                    g.get("changed_count", 0), ", ".join(g.get("changed") or []),
                    ", ..." if g.get("changed_count", 0) > len(g.get("changed") or []) else "")
            elif g.get("dirty") is False:
                s += ", clean working tree"
            out.append(s)
        else:
            out.append("commit unknown: %s" % (g.get("note") or "not a git checkout"))
    if meta.get("started"):
        out.append("started %s, %s" % (meta["started"], (
            "finished %s" % meta["finished"]) if meta.get("complete", True) else "not finished"))
    return out


def partial_line(cells, meta):
    """None for a complete report; else what a partial one holds."""
    if meta.get("complete", True):
        return None
    done = sum(1 for c in cells if c.status in ("PASS", "FAIL", "SKIPPED"))
    return "Partial report: %d of %d cells finished (%s); the others are PENDING or RUNNING." % (
        done, len(cells), "the run was interrupted" if meta.get("interrupted") else "the run is in progress")


def run_kind(meta):
    if meta["quick"]:
        return "Quick"
    return "Partial (--only)" if " --only" in (meta.get("args") or "") else "Full"


def skipped_tests(c):
    return getattr(c, "skipped_tests", None) or []


def mhz(c):
    if not c.info or c.info.get("hz") is None:
        return ""
    return "%.3f MHz" % (c.info["hz"] / 1e6)


def read_cost(c):
    j = c.to_json()
    if j["read_ns"] is None:
        return ""
    s = "%.1f ns" % j["read_ns"]
    if j["now_read_ns"] is not None:
        s += " (now() %.1f ns)" % j["now_read_ns"]
    return s


def tests_brief(c):
    """'38 passed', '24 passed, 14 skipped', '34 passed, 2 failed': a skipped
    test (target_compatible_with) is not a missing one."""
    t = c.tests
    out = "%d passed" % t["passed"]
    if t["failed"]:
        out += ", %d failed" % t["failed"]
    if t["skipped"]:
        out += ", %d skipped" % t["skipped"]
    return out


def counts(cells):
    return dict((k, sum(1 for c in cells if c.status == k)) for k in ("PASS", "FAIL", "SKIPPED"))


def host_desc():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except IOError:
        pass
    return "%s, %s, %d CPUs" % (platform.platform(), cpu, os.cpu_count() or 0)


def grid(cells, kind_filter):
    """rows, cols, {(row, col): cell} for the cells matching kind_filter."""
    sel = [c for c in cells if kind_filter(c)]
    rows, cols = [], []
    for c in sel:
        if c.row not in rows:
            rows.append(c.row)
        if c.col not in cols:
            cols.append(c.col)
    return rows, cols, dict(((c.row, c.col), c) for c in sel)


def sections(cells):
    """(title, rows, cols, map) for each grid of the report."""
    out = []
    comp = lambda c: c.kind in ("bazel", "san")  # noqa: E731
    out.append(("Host compilers: full test suite (Bazel) and sanitizers",) + grid(cells, comp))
    for h in HEADERS:
        out.append(("Language modes: %s (-Wall -Wextra -Werror -pedantic; c_api_test run)" % h,)
                   + grid(cells, lambda c, h=h: c.kind == "lang" and c.header == h))
    out.append(("Targets (--config=<arch>, QEMU user mode) and Windows",)
               + grid(cells, lambda c: c.kind in ("arch", "windows")))
    out.append(("x86 CPU models (qemu-x86_64 -cpu MODEL)",) + grid(cells, lambda c: c.kind == "cpu"))
    out.append(("Guests (ci/guest: Debian kernels under qemu-system-<arch>; checks and life events)",)
               + grid(cells, lambda c: c.kind == "guest"))
    return [s for s in out if s[1]]


def write_md(cells, meta, out):
    n = counts(cells)
    L = []
    L.append("# tickclock matrix report")
    L.append("")
    L.append("%s run of `ci/matrix%s`, %s, %s total on %s." % (
        run_kind(meta), meta["args"], meta["finished"], fmt_dur(meta["elapsed_s"]),
        meta["host"]))
    L.append("")
    part = partial_line(cells, meta)
    if part:
        L.append("**%s**" % part)
        L.append("")
    for line in run_lines(meta) + shard_lines(meta):
        L.append("- " + line)
    if run_lines(meta) or shard_lines(meta):
        L.append("")
    L.append("**%d cells: %d PASS, %d FAIL, %d SKIPPED.**" % (len(cells), n["PASS"], n["FAIL"], n["SKIPPED"]))
    L.append("")
    for title, rows, cols, m in sections(cells):
        L.append("## " + title)
        L.append("")
        L.append("| | " + " | ".join(cols) + " |")
        L.append("|---|" + "---|" * len(cols))
        for r in rows:
            vals = []
            for col in cols:
                c = m.get((r, col))
                if c is None:
                    vals.append("–")
                else:
                    v = c.status
                    if c.kind != "lang" and c.status != "SKIPPED":
                        v += " (%s)" % tests_brief(c)
                    vals.append(v)
            L.append("| %s | %s |" % (r, " | ".join(vals)))
        L.append("")
    L.append("## Cells")
    L.append("")
    L.append("| cell | status | version | tests p/f/s | source | frequency, method | read cost | time | log |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    lang_rows = {}
    for c in cells:
        if c.kind == "lang":
            lang_rows.setdefault((c.compiler, c.header), []).append(c)
            continue
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s | [log](%s) |" % (
            c.name, c.status + (": " + c.reason if c.status == "SKIPPED" else ""), c.version,
            "%d/%d/%d" % (c.tests["passed"], c.tests["failed"], c.tests["skipped"]) if c.status != "SKIPPED" else "",
            (c.info or {}).get("source", ""),
            ("%s, %s" % (mhz(c), (c.info or {}).get("freq_method", ""))) if c.info else "",
            read_cost(c), "%.0fs" % c.seconds if c.status != "SKIPPED" else "", c.log))
    for (comp, header), cs in lang_rows.items():
        n2 = counts(cs)
        srcs = sorted(set((c.info or {}).get("source", "?") for c in cs if c.info))
        L.append("| %s %s, %d modes | %s | %s | %d/%d/0 | %s | %s | %s | %.0fs | %s |" % (
            comp, header, len(cs), "PASS" if n2["FAIL"] == 0 and n2["PASS"] else
            ("FAIL %d" % n2["FAIL"] if n2["FAIL"] else "SKIPPED"),
            cs[0].version, n2["PASS"], n2["FAIL"], ", ".join(srcs),
            ", ".join(sorted(set("%s, %s" % (mhz(c), c.info.get("freq_method")) for c in cs if c.info))),
            "", sum(c.seconds for c in cs), "see report.json"))
    L.append("")
    fails = [c for c in cells if c.status == "FAIL"]
    if fails:
        L.append("## Failures")
        L.append("")
        for c in fails:
            L.append("### %s ([log](%s))" % (c.name, c.log))
            L.append("")
            L.append("```")
            L.extend(c.errors or [c.reason])
            L.append("```")
            L.append("")
    skips = [c for c in cells if c.status == "SKIPPED"]
    if skips:
        L.append("## Skipped cells")
        L.append("")
        for c in skips:
            L.append("- %s: %s" % (c.name, c.reason))
        L.append("")
    with_skips = [c for c in cells if skipped_tests(c)]
    if with_skips:
        L.append("## Skipped tests")
        L.append("")
        L.append("Per cell, each test target counted as skipped and why: SKIPPED by Bazel "
                 "(`target_compatible_with`), or PASSED with a `TICKCLOCK_SKIPPED:` line in its test.log.")
        L.append("")
        for c in with_skips:
            L.append("### %s (%d skipped)" % (c.name, len(skipped_tests(c))))
            L.append("")
            for t in skipped_tests(c):
                L.append("- `%s`: %s" % (t["target"], t["reason"]))
            L.append("")
    L.append("%d passed, %d failed, %d skipped" % (n["PASS"], n["FAIL"], n["SKIPPED"]))
    write_atomic(os.path.join(out, "report.md"), "\n".join(L) + "\n")


CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:20px;color:#1b1f24;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:16px;margin:22px 0 6px}
.meta{color:#57606a;margin-bottom:8px}
.sum span{display:inline-block;padding:3px 10px;border-radius:12px;margin-right:6px;font-weight:600}
table{border-collapse:collapse;margin:4px 0 8px}
th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:center;vertical-align:top}
th{background:#f6f8fa;font-weight:600;max-width:150px;overflow-wrap:anywhere}
th.row{white-space:nowrap}
th.row{text-align:left}
td.c a{color:inherit;text-decoration:none;display:block}
td.c{min-width:54px;font-weight:600;font-size:12px}
td.PASS,.PASS{background:#2da44e;color:#fff} td.FAIL,.FAIL{background:#cf222e;color:#fff}
td.SKIPPED,.SKIPPED{background:#d0d7de;color:#444} td.none{background:#fafbfc;color:#bbb}
td.c small{display:block;font-weight:400;font-size:11px;opacity:.9;white-space:nowrap}
td.SKIPPED small{white-space:normal;max-width:120px;margin:auto}
td.c pre{font-size:10px;text-align:left;white-space:pre-wrap;word-break:break-all;max-width:190px;max-height:9em;overflow:hidden;margin:2px 0 0;font-weight:400}
table.detail td{text-align:left;font-size:12px} table.detail th{overflow-wrap:normal} table.detail td.st{font-weight:600}
pre.err{background:#fff5f5;border:1px solid #f1aeb5;padding:6px;font-size:12px;white-space:pre-wrap}
.legend{margin:6px 0 4px;font-size:12px;color:#57606a}
.legend span{display:inline-block;padding:1px 8px;margin-right:4px;border-radius:3px;font-size:12px}
td.PENDING,.PENDING,td.RUNNING,.RUNNING{background:#fff8c5;color:#4d2d00} .none{background:#fafbfc;color:#bbb;border:1px solid #d0d7de}
.partial{background:#fff8c5;border:1px solid #d4a72c;padding:4px 8px;margin:6px 0;font-weight:600}
details ul{margin:2px 0;padding-left:18px} details summary{cursor:pointer}
"""


def write_html(cells, meta, out):
    n = counts(cells)
    e = html.escape
    H = []
    H.append("<!DOCTYPE html><html><head><meta charset='utf-8'><title>tickclock matrix</title>"
             "<style>%s</style></head><body>" % CSS)
    H.append("<h1>tickclock matrix</h1>")
    H.append("<div class='meta'>%s run of <code>ci/matrix%s</code> &middot; %s &middot; %s total &middot; %s</div>" % (
        run_kind(meta), e(meta["args"]), e(meta["finished"]), fmt_dur(meta["elapsed_s"]),
        e(meta["host"])))
    part = partial_line(cells, meta)
    if part:
        H.append("<div class='partial'>%s</div>" % e(part))
    for line in run_lines(meta) + shard_lines(meta):
        H.append("<div class='meta'>%s</div>" % e(line))
    H.append("<div class='sum'><span class='PASS'>%d PASS</span><span class='%s'>%d FAIL</span>"
             "<span class='SKIPPED'>%d SKIPPED</span> of %d cells</div>" % (
                 n["PASS"], "FAIL" if n["FAIL"] else "SKIPPED", n["FAIL"], n["SKIPPED"], len(cells)))
    H.append("<div class='legend'>Legend: <span class='PASS'>PASS</span>every test of the cell passed "
             "(&ldquo;N skipped&rdquo;: test targets that could not run there, listed under "
             "&ldquo;All cells&rdquo;) <span class='FAIL'>FAIL</span>a test, the build or the cell's checks "
             "failed (first error lines shown) <span class='SKIPPED'>SKIP</span>the cell could not run here "
             "(the reason is in the cell) <span class='PENDING'>PENDING</span>not finished yet "
             "(a partial report) <span class='none'>&ndash;</span>no such cell. "
             "Hover a cell for its compiler version, source and read cost; click it for its log.</div>")
    for title, rows, cols, m in sections(cells):
        H.append("<h2>%s</h2><table><tr><th></th>%s</tr>" % (e(title), "".join("<th>%s</th>" % e(c) for c in cols)))
        for r in rows:
            H.append("<tr><th class='row'>%s</th>" % e(r))
            for col in cols:
                c = m.get((r, col))
                if c is None:
                    H.append("<td class='none'>&ndash;</td>")
                    continue
                tip = [c.name, c.status]
                if c.version:
                    tip.append(c.version)
                if c.reason:
                    tip.append(c.reason)
                if c.info:
                    tip.append("source %s, %s, %s, read %s" % (c.info.get("source"), mhz(c),
                                                               c.info.get("freq_method"), read_cost(c)))
                body = e(c.status if c.status != "SKIPPED" else "SKIP")
                small = ""
                if c.kind != "lang" and c.status != "SKIPPED":
                    small += tests_brief(c)
                if c.info and c.status == "PASS":
                    small += ("<br>" if small else "") + e(c.info.get("source", ""))
                if c.status != "SKIPPED":
                    small += ("<br>" if small else "") + "%.0fs" % c.seconds
                elif c.kind != "lang":
                    small = e(c.reason)
                err = ""
                if c.status == "FAIL":
                    err = "<pre>%s</pre>" % e("\n".join((c.errors or [c.reason])[:4]))
                H.append("<td class='c %s' title='%s'><a href='%s'>%s<small>%s</small></a>%s</td>" % (
                    c.status, e(" | ".join(tip), quote=True), e(c.log), body, small, err))
            H.append("</tr>")
        H.append("</table>")
    fails = [c for c in cells if c.status == "FAIL"]
    if fails:
        H.append("<h2>Failures</h2>")
        for c in fails:
            H.append("<h3><a href='%s'>%s</a></h3><pre class='err'>%s</pre>" % (
                e(c.log), e(c.name), e("\n".join(c.errors or [c.reason]))))
    H.append("<h2>All cells</h2><table class='detail'><tr><th>cell</th><th>status</th><th>compiler version</th>"
             "<th>flags</th><th>tests p/f/s</th><th>source</th><th>frequency, method</th><th>read cost</th>"
             "<th>time</th><th>reason / notes</th><th>skipped tests</th></tr>")
    for c in sorted(cells, key=lambda c: STATUS_ORDER.get(c.status, 9)):
        H.append("<tr><td><a href='%s'>%s</a></td><td class='st %s'>%s</td><td>%s</td><td><code>%s</code></td>"
                 "<td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
                     e(c.log), e(c.name), c.status, c.status, e(c.version), e(c.flags),
                     "%d/%d/%d" % (c.tests["passed"], c.tests["failed"], c.tests["skipped"])
                     if c.status != "SKIPPED" else "",
                     e((c.info or {}).get("source", "")),
                     e("%s, %s" % (mhz(c), c.info.get("freq_method"))) if c.info else "",
                     e(read_cost(c)), "%.1fs" % c.seconds if c.status != "SKIPPED" else "",
                     e("; ".join(([c.reason] if c.reason else []) + c.notes)), skipped_html(c)))
    H.append("</table></body></html>")
    write_atomic(os.path.join(out, "report.html"), "\n".join(H) + "\n")


def skipped_html(c):
    """An expandable list of the cell's skipped tests, each with its reason."""
    ts = skipped_tests(c)
    if not ts:
        return ""
    e = html.escape
    return "<details><summary>%d skipped</summary><ul>%s</ul></details>" % (
        len(ts), "".join("<li><code>%s</code>: %s</li>" % (e(t["target"]), e(t["reason"])) for t in ts))


def write_json(cells, meta, out):
    n = counts(cells)
    doc = dict(meta)
    doc["counts"] = {"cells": len(cells), "pass": n["PASS"], "fail": n["FAIL"], "skipped": n["SKIPPED"]}
    doc["cells"] = [c.to_json() for c in cells]
    write_atomic(os.path.join(out, "report.json"), json.dumps(doc, indent=1) + "\n")


