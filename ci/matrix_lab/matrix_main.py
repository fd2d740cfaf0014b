#!/usr/bin/env python3
"""ci/matrix — the compiler x language x sanitizer x target x CPU matrix.

    ci/matrix [--quick] [--only REGEX] [--jobs N] [--list] [--no-deps] [--rerender]
              [--shard K/N [--timings REPORT_JSON]] [--out DIR] [--remote-cache URL]
    ci/matrix --merge DIR... [--out DIR]

Run through the ci/matrix wrapper (it makes sure python3 is there). See
ci/matrix_lab/README.md for the cells, how to add a compiler or a target, and how to
read the report. Writes out/matrix/ (--only: out/matrix-only/; or --out DIR)
{report.md,report.json,report.html} and one log per cell under logs/. A run
writes into DIR/current/, the report rewritten as each cell finishes, and
moves it to DIR/ only when every cell has finished: the previous complete
report stays in DIR/ until then. The last line printed is
"N passed, N failed, N skipped" (cells; SKIPPED cells count as skipped).
Exit status 0 iff no cell FAILED.
"""

import argparse
import json
import os
import re
import signal
import sys

# The modules (see ci/matrix_lab/README.md): matrix_cells.py (what the matrix is made
# of: the one file to edit to add a cell), matrix_runner.py (one cell),
# matrix_run.py (a run of a selection), matrix_shard.py (--shard, --merge,
# the shared cache key), matrix_report.py (report.md/.html/.json),
# bazel_results.py (Bazel's results counted, as ci/matrix_lab/summarize counts them).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matrix_cells import QUICK, ROOT, all_cells  # noqa: E402
from matrix_report import fmt_dur, write_html, write_md  # noqa: E402
from matrix_run import run_cells  # noqa: E402
from matrix_shard import (  # noqa: E402
    Usage, cells_from_doc, doc_meta, load_timings, merge, parse_shard, shard_estimate, shown, split,
    split_digest)

OUT = os.path.join(ROOT, "out", "matrix")
OUT_ONLY = os.path.join(ROOT, "out", "matrix-only")  # where --only runs go without --out


HELP_EPILOG = """\
time:
  the full matrix ({all} cells) on 2 cores: about 30 minutes with warm Bazel
  caches (the compiler, target and CPU cells, {rest} now, took 25 min; the
  {guest} guest cells add about 4 min), about 45 minutes cold (fresh clone);
  --quick ({quick} cells) 2-11 minutes; one language-mode cell a few seconds;
  --list, --rerender, --merge and --help run nothing.

requirements:
  Debian 12 (x86-64), python3, Bazel 4.2.3 (bazel-bootstrap); the compilers,
  cross toolchains, QEMU, Wine and guest kernels the selected cells need;
  about 3.5 GB of packages for every cell, plus the Bazel output trees.
  Offline once they are installed.

side effects:
  before running cells it calls ci/deps (matrix <compilers>, cross, windows,
  guest: only the groups the selected cells need), which runs apt-get update
  and apt-get install as root (sudo when not root) when a package is
  missing, and may add foreign dpkg architectures (arm64, ppc64el, s390x);
  --no-deps never calls it. Writes only under the output folder: the run
  goes into OUT/current/ (the report rewritten as each cell finishes), and
  replaces OUT/report.{md,json,html} and OUT/logs/ when every cell is done;
  an interrupted run leaves the previous report in place. Bazel's output
  trees (~/.cache/bazel) grow per compiler and target.

The last line is "N passed, N failed, N skipped" (cells); exit 0 iff no cell
FAILED, 2 for bad arguments. See ci/matrix_lab/README.md.
"""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not usage + message
        raise Usage(message)


def parser():
    ap = Parser(prog="ci/matrix", description=__doc__.split("\n\n")[0], epilog=help_epilog(),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a handful of representative cells (< 10 min)")
    ap.add_argument("--only", metavar="REGEX", help="only cells whose name matches (case-insensitive search)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                    help="parallel non-Bazel cells (default: CPUs); Bazel cells run one at a time")
    ap.add_argument("--list", action="store_true", help="list the selected cells (of --shard K/N) and exit")
    ap.add_argument("--no-deps", action="store_true", help="do not run ci/deps")
    ap.add_argument("--rerender", action="store_true",
                    help="write report.md and report.html again from OUT/report.json, run nothing")
    ap.add_argument("--shard", metavar="K/N",
                    help="run the K-th of N deterministic parts of the selected cells, balanced by time")
    ap.add_argument("--timings", metavar="REPORT_JSON",
                    help="per-cell seconds that balance --shard (default: OUT/report.json if there is one, "
                         "else a static estimate per kind of cell); every shard of a run must use the same")
    ap.add_argument("--out", metavar="DIR",
                    help="where the report and logs go (default: out/matrix; with --only: out/matrix-only)")
    ap.add_argument("--merge", metavar="DIR", nargs="+",
                    help="combine the reports in these folders into one in --out, run nothing")
    ap.add_argument("--remote-cache", metavar="URL",
                    help="Bazel remote cache (http://, https://, grpc://, grpcs://) for every Bazel build, "
                         "with --remote_upload_local_results and a per-cell key")
    return ap


def user_path(p):
    """A path given on the command line, relative to where ci/matrix was
    started (the wrapper changes into the checkout first)."""
    base = os.environ.get("CI_MATRIX_CWD") or os.getcwd()
    return os.path.normpath(os.path.join(base, os.path.expanduser(p)))


def rerender(out):
    """report.md and report.html again from report.json (after a change to
    how the report is written, without running the cells again)."""
    path = os.path.join(out, "report.json")
    try:
        with open(path) as f:
            doc = json.load(f)
    except (IOError, ValueError) as e:
        raise Usage("%s: cannot read a report: %s" % (path, e))
    cells = cells_from_doc(doc, path)
    meta = doc_meta(doc, path)
    write_md(cells, meta, out)
    write_html(cells, meta, out)
    print("ci/matrix: report.md and report.html rewritten from %s (%d cells)" % (path, len(cells)))
    return 0


def out_dir(args):
    """Where the report goes (--out, checked), and the argument checks."""
    out = OUT
    if args.jobs < 1:
        raise Usage("--jobs %d: expected 1 or more" % args.jobs)
    if args.out is None and args.only and not (args.merge or args.rerender):
        out = OUT_ONLY  # a partial selection never replaces the full report
    if args.out is not None:
        out = user_path(args.out)
        if not args.out or out == ROOT or ROOT.startswith(out.rstrip("/") + "/"):
            raise Usage("--out %s: not a folder to write a report into (it holds the checkout)" % (args.out or "''"))
    if args.remote_cache is not None and not re.match(r"^(https?|grpcs?)://\S+$", args.remote_cache):
        raise Usage("--remote-cache '%s': expected a URL (http://HOST:PORT, grpc://HOST:PORT, ...)" % args.remote_cache)
    return out


def help_epilog():
    """HELP_EPILOG with the cell counts of the table (counted, never typed in)."""
    text = HELP_EPILOG
    try:
        cells = all_cells()
    except (OSError, ValueError) as e:  # the table's files missing: --help still answers
        counts = (("all", "?"), ("rest", "?"), ("guest", "?"), ("quick", "?"))
        text += "\n(cell counts unknown: %s)\n" % e
    else:
        guest = sum(1 for c in cells if c.kind == "guest")
        quick = sum(1 for c in cells if any(re.search(q, c.name) for q in QUICK))
        counts = (("all", len(cells)), ("rest", len(cells) - guest), ("guest", guest), ("quick", quick))
    for k, v in counts:
        text = text.replace("{%s}" % k, str(v))
    return text


def select(args):
    """The cells --quick and --only select, in the matrix's order."""
    cells = all_cells()
    if args.quick:
        cells = [c for c in cells if any(re.search(q, c.name) for q in QUICK)]
    if args.only:
        try:
            rx = re.compile(args.only, re.I)
        except re.error as e:
            raise Usage("--only '%s': not a regular expression (%s)" % (args.only, e))
        cells = [c for c in cells if rx.search(c.name)]
    return cells


def shard_of(args, spec, cells, out):
    """--shard K/N (spec: (K, N)) of cells: {spec, selection, split_by,
    split_id, parts, timings}."""
    tpath = user_path(args.timings) if args.timings else os.path.join(out, "report.json")
    if args.timings and not os.path.exists(tpath):
        raise Usage("--timings %s: no such file" % args.timings)
    timings = load_timings(tpath, whole_only=not args.timings)
    split_by = ("seconds from %s (static estimate for %d cells not in it)"
                % (shown(tpath), sum(1 for c in cells if c.name not in timings))) if timings else \
        "static estimate per kind"
    parts = split(cells, spec[1], timings)
    return {"spec": spec, "selection": [c.name for c in cells], "split_by": split_by,
            "split_id": split_digest(parts), "parts": parts, "timings": timings}


def list_cells(cells, shard, jobs):
    """--list: the cells, and with --shard every shard's estimate."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `ci/matrix --list | head` ends quietly
    for c in cells:
        print(c.name)
    if shard:
        k, n = shard["spec"]
        for i, part in enumerate(shard["parts"]):
            b, l, wall = shard_estimate(part, shard["timings"], jobs)
            print("shard %d/%d: %d cells, Bazel lane %s, language modes %s (%s with --jobs %d)%s" % (
                i + 1, n, len(part), fmt_dur(b), fmt_dur(l), fmt_dur(wall), jobs,
                "  <- listed" if i + 1 == k else ""))
        print("split by %s" % shard["split_by"])
        print("%d cells (shard %d/%d of %d selected)" % (len(cells), k, n, len(shard["selection"])))
    else:
        print("%d cells" % len(cells))
    return 0


def main():
    try:
        return run(sys.argv[1:])
    except Usage as e:
        print("ci/matrix: %s" % e, file=sys.stderr)
        return 2


def run(argv):
    args = parser().parse_args(argv)
    out = out_dir(args)
    if args.merge:
        other = [o for o, v in (("--shard", args.shard), ("--quick", args.quick), ("--only", args.only),
                                ("--list", args.list), ("--rerender", args.rerender),
                                ("--remote-cache", args.remote_cache), ("--timings", args.timings)) if v]
        if other:
            raise Usage("--merge runs nothing; it does not take %s" % ", ".join(other))
        return merge([user_path(d) for d in args.merge], out)
    if args.rerender:
        return rerender(out)
    spec = parse_shard(args.shard) if args.shard is not None else None
    cells = select(args)
    shard = shard_of(args, spec, cells, out) if spec else None
    if shard:
        cells = shard["parts"][shard["spec"][0] - 1]
    if args.list:
        return list_cells(cells, shard, args.jobs)
    if not cells and not shard:
        print("ci/matrix: no cell selected")
        print("0 passed, 1 failed, 0 skipped")
        return 1
    return run_cells(args, argv, cells, out, shard)


if __name__ == "__main__":
    sys.exit(main())
