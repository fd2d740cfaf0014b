#!/usr/bin/env python3
"""The counts the guides give, against the code that defines them.

  - the matrix table of README.md (its "count" column, one row per kind of
    cell, then the total) against `ci/matrix --list`, counted per kind from
    the cell table;
  - "`--quick` (N cells" in README.md against `ci/matrix --quick --list`;
  - `ci/matrix --help`'s "(N cells)" figures against the same lists.
A figure measured on one machine does not belong in these places: it goes
to docs/measurements.md with its host and commit.

usage: doc_counts_test.py README.md [CI_MATRIX]
CI_MATRIX defaults to ci/matrix of the checkout README.md is in (under
Bazel, the one its runfile links to). Ends with "N passed, N failed".
"""
import collections
import os
import re
import subprocess
import sys

# the README table's rows, in order, and the cell kinds each counts
ROWS = [("host compilers", "bazel"), ("language modes", "lang"), ("sanitizers", "san"),
        ("cross targets", "arch"), ("x86 CPU models", "cpu"), ("Windows", "windows"),
        ("guest lab", "guest")]

passed = failed = 0


def check(what, ok, why=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + what)
    else:
        failed += 1
        print("FAIL %s%s" % (what, ": " + why if why else ""))


def cell_kind(name):
    """A cell's kind, from the name --list prints."""
    w = name.split()
    if w[0] in ("guest", "cpu"):
        return w[0]
    second = w[1] if len(w) > 1 else ""
    return {"bazel": "bazel", "cross": "arch", "asan+ubsan": "san", "tsan": "san", "windows": "windows",
            "core-header": "lang", "single-header": "lang"}.get(second, "unknown: " + name)


def matrix(matrix_cli, *args):
    r = subprocess.run([matrix_cli] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode != 0:
        raise SystemExit("ci/matrix %s: exit %d\n%s" % (" ".join(args), r.returncode, r.stdout))
    return r.stdout


def listed(out):
    """The cell names --list printed, checked against its closing "N cells"."""
    lines = [l for l in out.split("\n") if l.strip()]
    m = re.match(r"^(\d+) cells$", lines[-1])
    if not m:
        raise SystemExit("ci/matrix --list does not end with 'N cells': %r" % lines[-1])
    names = [l.strip() for l in lines[:-1]]
    check("--list prints as many cells as it counts (%s)" % m.group(1), int(m.group(1)) == len(names))
    return names


def main():
    readme = sys.argv[1]
    matrix_py = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.realpath(readme)), "ci", "matrix")
    text = open(readme, encoding="utf-8").read()

    names = listed(matrix(matrix_py, "--list"))
    quick = listed(matrix(matrix_py, "--quick", "--list"))
    kinds = collections.Counter(cell_kind(n) for n in names)
    check("every cell has a known kind", not any(k.startswith("unknown") for k in kinds),
          ", ".join(k for k in kinds if k.startswith("unknown")))

    # the README's matrix table: the rows between "| cells |" and a blank line
    sec = text[text.index("\n## The matrix\n"):]
    table = sec[sec.index("\n| cells |"):]
    table = table[1:table.index("\n\n")].split("\n")[2:]
    counts = []
    for row in table:
        cols = [c.strip() for c in row.strip("|").split("|")]
        counts.append((cols[0], cols[-1]))
    for (label, kind), (cell, count) in zip(ROWS, counts):
        check("README matrix table: '%s' row (%s) says %s, the table has %d"
              % (label, kind, count, kinds[kind]),
              cell.startswith(label) and count.isdigit() and int(count) == kinds[kind],
              "row '%s'" % cell[:60])
    total = counts[len(ROWS)] if len(counts) > len(ROWS) else ("", "")
    check("README matrix table: the total row says %s, --list %d" % (total[1], len(names)),
          total[0].startswith("all") and total[1].isdigit() and int(total[1]) == len(names))
    check("README matrix table: a row for every kind of cell (%s)" % ", ".join(sorted(kinds)),
          set(kinds) == set(k for _, k in ROWS) and len(counts) == len(ROWS) + 1,
          "kinds %s, %d rows" % (sorted(kinds), len(counts)))

    # every "--quick (N cells" in the README
    qs = re.findall(r"`--quick` \((\d+) cells", text)
    check("README gives the --quick count", len(qs) >= 1)
    for q in qs:
        check("README: --quick (%s cells), --quick --list %d" % (q, len(quick)), int(q) == len(quick))

    # ci/matrix --help
    h = matrix(matrix_py, "--help")
    m = re.search(r"the full matrix \((\d+) cells\)", h)
    check("ci/matrix --help: the full matrix's count is --list's (%d)" % len(names),
          m is not None and int(m.group(1)) == len(names), m.group(0) if m else "no count")
    m = re.search(r"--quick\s+\((\d+) cells\)", h)
    check("ci/matrix --help: the quick count is --quick --list's (%d)" % len(quick),
          m is not None and int(m.group(1)) == len(quick), m.group(0) if m else "no count")
    # no other cell count typed into the README's first screen or the help
    first = text[:text.index("\n## Use it from C\n")]
    check("README's first screen types in no cell count",
          not re.search(r"\b\d+ cells\b", first), re.search(r"\b\d+ cells\b", first).group(0)
          if re.search(r"\b\d+ cells\b", first) else "")
    # figures that belong to one host or one commit stay out of the guides
    vend = text[text.index("**Copy one header.**"):]
    vend = vend[:vend.index("\n\n")]
    check("README gives no byte size for the single header (it changes with every commit)",
          not re.search(r"\d bytes", vend))
    check("README has no 'Measured on this machine' (docs/measurements.md, per host)",
          "Measured on this machine" not in text)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
