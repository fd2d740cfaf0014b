"""Bazel's per-test result lines, counted: the one implementation behind
ci/matrix_lab/summarize (ci/test's summary line) and ci/matrix (each Bazel cell).

  - PASSED is a pass, unless the target's own test.log (under the
    bazel-testlogs folder; a sharded target: every shard_*/test.log) has a
    line "TICKCLOCK_SKIPPED: reason": a check that could not run on this
    host said so (tests/support/skip.h), and the target counts as skipped;
  - SKIPPED (target_compatible_with) is a skip;
  - FLAKY (failed at least once, then passed) is a failure, never a pass; so
    are FAILED, TIMEOUT, NO STATUS, INCOMPLETE and REMOTE FAILURE;
  - a build that failed before any test ran (Bazel's exit status neither 0
    nor 3, no failure counted) is one failure: a broken build never reads
    as green.

cell_verdict() is a Bazel cell's PASS/FAIL from those counts;
skipped_tests() says why each skipped target was skipped (ci/matrix's
report).
"""

import os
import re

STATUS_LINE = re.compile(r"^(//\S+)\s+(?:\(cached\) )?"
                         r"(PASSED|FLAKY|SKIPPED|FAILED|TIMEOUT|NO STATUS|INCOMPLETE|REMOTE FAILURE)")
SKIP_MARK = "TICKCLOCK_SKIPPED: "


def skip_reasons(testlogs, target):
    """Every distinct "TICKCLOCK_SKIPPED: reason" of a target's test.log
    (and its shards' logs), in order; [] when there is none."""
    out = []
    if not testlogs:
        return out
    rel = target[2:].replace(":", "/")
    logs = [os.path.join(testlogs, rel, "test.log")]
    d = os.path.join(testlogs, rel)
    if os.path.isdir(d):
        logs += sorted(os.path.join(d, x, "test.log") for x in os.listdir(d) if x.startswith("shard_"))
    for tl in logs:
        try:
            with open(tl, errors="replace") as f:
                for line in f:
                    if line.startswith(SKIP_MARK):
                        why = line[len(SKIP_MARK):].strip()
                        if why not in out:
                            out.append(why)
        except OSError:
            continue
    return out


def results(log_text, testlogs=None):
    """[(target, outcome, why)] for each result line of a Bazel log, in
    order: outcome is "passed", "failed" or "skipped" as counted above; why
    is Bazel's status (FLAKY, FAILED, SKIPPED, ...) or, for a PASSED target
    counted as skipped, the list of its TICKCLOCK_SKIPPED reasons."""
    out = []
    for line in log_text.splitlines():
        m = STATUS_LINE.match(line)
        if not m:
            continue
        target, status = m.group(1), m.group(2)
        if status == "PASSED":
            why = skip_reasons(testlogs, target)
            out.append((target, "skipped", why) if why else (target, "passed", status))
        elif status == "SKIPPED":
            out.append((target, "skipped", status))
        else:
            out.append((target, "failed", status))
    return out


def counts(res, rc):
    """{passed, failed, skipped} of results(), with Bazel's exit status."""
    n = {"passed": 0, "failed": 0, "skipped": 0}
    for _, outcome, _ in res:
        n[outcome] += 1
    if rc not in (0, 3) and n["failed"] == 0:
        n["failed"] = 1  # the build failed before any test ran
    return n


def summary(n):
    return "%d passed, %d failed, %d skipped" % (n["passed"], n["failed"], n["skipped"])


def summarize(log_text, rc, testlogs=None):
    """The summary line of a Bazel log: "N passed, N failed, N skipped"."""
    return summary(counts(results(log_text, testlogs), rc))


def cell_verdict(rc, tests):
    """(ok, reason) of a Bazel cell from bazel's exit code and its counts."""
    if rc != 0 or tests["failed"] > 0:
        return False, "bazel test exited %d" % rc if rc != 0 else "%d failed" % tests["failed"]
    if tests["passed"] == 0:
        return False, "no test passed"
    return True, None


def incompatible_reason(root, target, plat):
    """Why Bazel SKIPPED a target: "incompatible with <platform>", its
    target_compatible_with expression and the comment above the rule (or
    above the constant in platforms/defs.bzl) from the BUILD file."""
    why = "incompatible with %s" % plat
    pkg, _, name = target[2:].partition(":")
    text = None
    for b in ("BUILD", "BUILD.bazel"):
        try:
            with open(os.path.join(root, pkg, b), errors="replace") as f:
                text = f.read()
            break
        except (IOError, OSError):
            continue
    if text is None:
        return why
    lines = text.splitlines()
    at = [i for i, l in enumerate(lines) if re.match(r'\s*name\s*=\s*"%s"' % re.escape(name), l)]
    if not at:
        return why
    start = at[0]
    while start > 0 and not re.match(r"^[A-Za-z_][\w.]*\(", lines[start]):
        start -= 1
    end = at[0]
    while end < len(lines) - 1 and not lines[end].startswith(")"):
        end += 1
    expr = None
    for l in lines[start:end + 1]:
        m = re.match(r"\s*target_compatible_with\s*=\s*(.+?),?\s*$", l)
        if m:
            expr = m.group(1)
    comment = []
    i = start - 1
    while i >= 0 and lines[i].lstrip().startswith("#"):
        comment.insert(0, lines[i].lstrip("# ").strip())
        i -= 1
    if not comment and expr and re.match(r"^[A-Z_]+$", expr):
        try:
            with open(os.path.join(root, "platforms", "defs.bzl"), errors="replace") as f:
                dl = f.read().splitlines()
            j = [k for k, l in enumerate(dl) if l.startswith(expr + " =")]
            k = (j[0] if j else 0) - 1
            while j and k >= 0 and dl[k].startswith("#"):
                comment.insert(0, dl[k].lstrip("# ").strip())
                k -= 1
        except (IOError, OSError):
            pass
    if expr:
        why += " (target_compatible_with = %s)" % expr
    if comment:
        c = " ".join(comment)
        why += ": " + (c if len(c) <= 240 else c[:237] + "...")
    return why


def skipped_tests(res, root, plat):
    """[{target, reason}] for each target results() counted as skipped:
    SKIPPED by Bazel (incompatible_reason), or PASSED with TICKCLOCK_SKIPPED
    lines (their text)."""
    out = []
    for target, outcome, why in res:
        if outcome != "skipped":
            continue
        if why == "SKIPPED":
            out.append({"target": target, "reason": incompatible_reason(root, target, plat)})
        else:
            out.append({"target": target, "reason": "; ".join(why)})
    return out
