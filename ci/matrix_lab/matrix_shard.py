"""The matrix beyond one machine: --shard K/N (a deterministic part of the
selection, balanced by time), --merge (shard reports into one) and the
per-cell key of a shared Bazel cache (--remote-cache); and reading a
report.json back into cells (--merge, --rerender). Bad input raises Usage:
one line on stderr, exit 2.
"""

import hashlib
import json
import os
import re
import shutil
import time

from matrix_cells import EST, ROOT, all_cells, slug
from matrix_report import counts, shard_lines, write_html, write_json, write_md


class Usage(Exception):
    """Bad input: one line on stderr, exit 2."""


def shown(p):
    r = os.path.relpath(p, ROOT)
    return p if r.startswith("..") else r


def parse_shard(s):
    m = re.match(r"^(\d+)/(\d+)$", s or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise Usage("--shard '%s': expected K/N with 1 <= K <= N (e.g. 1/2)" % s)
    return int(m.group(1)), int(m.group(2))


def lane(cell):
    """Bazel cells run one after another, the language-mode cells in a pool
    beside them: each lane is balanced on its own."""
    return "lang" if cell.kind == "lang" else "bazel"


def load_timings(path, whole_only=False):
    """{cell name: seconds} from a report.json (cells that ran), or {} when
    there is none; an unreadable one is bad input. whole_only: a single
    shard's report counts as none (the next shard run into the same --out
    would otherwise split by another part's times)."""
    if not path or not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            doc = json.load(f)
        cells = doc["cells"]
        if whole_only and doc.get("shard"):
            return {}
        return dict((c["name"], float(c["seconds"])) for c in cells
                    if c.get("status") in ("PASS", "FAIL") and float(c.get("seconds") or 0) > 0)
    except (IOError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise Usage("timings from %s: not a ci/matrix report.json (%s)" % (shown(path), e))


def estimate(cell, timings):
    return timings.get(cell.name, EST[cell.kind])


def split(cells, n, timings):
    """Deterministic split into n shards, balanced by estimated seconds:
    per lane, longest first, each cell onto the shard whose lane is least
    loaded (ties: least total, then lowest index). Within a shard the cells
    keep the matrix's order. Returns [[cells of shard 1], ...]."""
    load = dict(((l, s), 0.0) for l in ("bazel", "lang") for s in range(n))
    total = [0.0] * n
    where = {}
    for ln in ("bazel", "lang"):
        mine = sorted((c for c in cells if lane(c) == ln), key=lambda c: (-estimate(c, timings), c.name))
        for c in mine:
            s = min(range(n), key=lambda i: (load[(ln, i)], total[i], i))
            where[c.name] = s
            e = estimate(c, timings)
            load[(ln, s)] += e
            total[s] += e
    shards = [[] for _ in range(n)]
    for c in cells:
        shards[where[c.name]].append(c)
    return shards


def split_digest(parts):
    """Names the whole split: the shards of one run must all carry the same."""
    return hashlib.sha256("\n".join("%d %s" % (i + 1, c.name) for i, p in enumerate(parts)
                                     for c in p).encode()).hexdigest()[:16]


def shard_estimate(cells, timings, jobs):
    bazel = sum(estimate(c, timings) for c in cells if lane(c) == "bazel")
    lang = sum(estimate(c, timings) for c in cells if lane(c) == "lang")
    return bazel, lang, max(bazel, lang / max(1, jobs))


# ---- a shared Bazel cache (--remote-cache) ----------------------------------
def cache_key(cell_or_name, version, flags):
    """Per-cell remote cache key: the cell, and a digest of the compiler's
    version line and the cell's Bazel flags. Bazel puts it into every
    action's platform properties (--remote_default_exec_properties), which
    are part of the action digest: an HTTP cache ignores
    --remote_instance_name, so that would not separate them."""
    h = hashlib.sha256(("%s\n%s" % (version, " ".join(flags))).encode()).hexdigest()[:16]
    return "%s-%s" % (slug(cell_or_name), h)


def remote_flags(url, key):
    return ["--remote_cache=%s" % url, "--remote_upload_local_results",
            "--remote_default_exec_properties=tickclock-cache-key=%s" % key]


def process_stats(text):
    """Sums Bazel's closing "INFO: N processes: X remote cache hit, Y internal,
    Z linux-sandbox." lines: {processes, hits, internal}."""
    st = {"processes": 0, "hits": 0, "internal": 0}
    for m in re.finditer(r"^INFO: (\d+) process(?:es)?(?:: (.*?))?\.?$", text, re.M):
        st["processes"] += int(m.group(1))
        for part in (m.group(2) or "").split(","):
            p = re.match(r"\s*(\d+) (.+?)\s*$", part)
            if p and p.group(2) == "remote cache hit":
                st["hits"] += int(p.group(1))
            elif p and p.group(2) == "internal":
                st["internal"] += int(p.group(1))
    return st


def hit_ratio(st):
    real = st["processes"] - st["internal"]
    return "%.0f%%" % (100.0 * st["hits"] / real) if real > 0 else "n/a"


# ---- reports read back (--merge, --rerender) ---------------------------------
def cells_from_doc(doc, where):
    """Cells (with their results) from a report.json; raises Usage."""
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise Usage("%s: expected an object with a \"cells\" list (a report.json written by ci/matrix)" % where)
    known = dict((c.name, c) for c in all_cells())
    cells = []
    for i, j in enumerate(doc["cells"]):
        c = known.get(j.get("name")) if isinstance(j, dict) else None
        if c is None:
            raise Usage("%s: cell %d ('%s') is not a cell of this ci/matrix"
                        % (where, i, j.get("name") if isinstance(j, dict) else j))
        try:
            c.status, c.seconds, c.tests = j["status"], j["seconds"], j["tests"]
            c.version, c.flags, c.log = j["version"], j["flags"], j["log"]
            c.reason, c.errors, c.notes = j["reason"] or "", j["errors"] or [], j["notes"] or []
            c.remote = j.get("remote_cache")
            c.skipped_tests = j.get("skipped_tests") or []
            if j.get("source") is not None:
                c.info = {"source": j["source"], "hz": j["frequency_hz"],
                          "freq_method": j["frequency_method"], "uncertainty_ppm": j["uncertainty_ppm"],
                          "now_read_ns": j["now_read_ns"], "why": j["why"], "compiler": j["compiled_by"],
                          "candidates": j["candidates"]}
        except KeyError as e:
            raise Usage("%s: cell %d ('%s') has no field %s" % (where, i, c.name, e))
        cells.append(c)
    return cells


META_KEYS = ("quick", "args", "finished", "elapsed_s", "host", "jobs")
META_OPTIONAL = ("machine", "shard", "shards", "selection", "remote_cache", "git", "started", "complete",
                 "interrupted")


def doc_meta(doc, where):
    try:
        meta = dict((k, doc[k]) for k in META_KEYS)
    except KeyError as e:
        raise Usage("%s: no field %s" % (where, e))
    for k in META_OPTIONAL:
        if doc.get(k) is not None:
            meta[k] = doc[k]
    return meta


def read_reports(dirs):
    """[(dir, doc, cells, meta)] of the report.json in each folder."""
    docs = []
    for d in dirs:
        path = os.path.join(d, "report.json")
        try:
            with open(path) as f:
                doc = json.load(f)
        except (IOError, ValueError) as e:
            raise Usage("%s: cannot read a report: %s" % (shown(path), e))
        cells = cells_from_doc(doc, shown(path))
        docs.append((d, doc, cells, doc_meta(doc, shown(path))))
    return docs


def check_shards(docs):
    """Raises Usage unless the reports hold every cell of their runs
    exactly once, each shard once, all split the same way."""
    # A sharded report names every cell of its run (the selection before the
    # split); reports of one run must together hold each of them.
    runs = {}
    for d, doc, cells, meta in docs:
        sel = tuple(meta.get("selection") or [c.name for c in cells])
        spec = meta.get("shard", {}).get("spec", "1/1")
        for c in cells:
            if c.name not in sel:
                raise Usage("%s: cell '%s' is not in its own selection" % (shown(d), c.name))
        run = runs.setdefault(sel, {})
        if spec in run:
            raise Usage("shard %s given twice: %s and %s (duplicate)" % (spec, shown(run[spec]), shown(d)))
        split_id = meta.get("shard", {}).get("split")
        for other_spec, other in run.items():
            other_id = [m.get("shard", {}).get("split") for dd, _, _, m in docs if dd == other][0]
            if split_id and other_id and split_id != other_id:
                raise Usage("shard %s (%s) and shard %s (%s) were split differently (%s / %s); run every "
                            "shard with the same --timings" % (
                                other_spec, shown(other), spec, shown(d),
                                [m for dd, _, _, m in docs if dd == other][0]["shard"].get("timings"),
                                meta["shard"].get("timings")))
        run[spec] = d
    owner = {}
    for d, doc, cells, meta in docs:
        for c in cells:
            if c.name in owner:
                raise Usage("cell '%s' is in both %s and %s (duplicate)" % (c.name, shown(owner[c.name]), shown(d)))
            owner[c.name] = d
    for sel, run in runs.items():
        for name in sel:
            if name not in owner:
                n = list(run)[0].split("/")[1]
                have = ", ".join(sorted(run))
                raise Usage("cell '%s' is missing: no report holds it (shards given: %s of %s; a shard "
                            "missing, or shards split with different timings)" % (name, have, n))


def merged_meta(docs, dirs, merged, shards):
    """The merged report's header: each shard's, the commit(s) tested and
    the remote cache counts summed."""
    caches = [s["remote_cache"] for s in shards if s.get("remote_cache")]
    meta = {
        "quick": all(m["quick"] for _, _, _, m in docs),
        "args": " --merge " + " ".join(shown(d) for d in dirs),
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "elapsed_s": max(m["elapsed_s"] for _, _, _, m in docs),
        "host": "%d shard reports" % len(docs),
        "jobs": max(m["jobs"] for _, _, _, m in docs),
        "shards": shards,
        "selection": [c.name for c in merged],
    }
    commits = sorted(set((s.get("git") or {}).get("commit") or "unknown" for s in shards))
    if len(commits) == 1:
        meta["git"] = shards[0].get("git") or {"commit": None, "note": "the shards recorded no commit"}
        if any((s.get("git") or {}).get("dirty") for s in shards):
            meta["git"] = dict(meta["git"], dirty=True)
    else:
        meta["git"] = {"commit": None, "note": "the shards tested different commits: %s" % ", ".join(commits)}
    if caches:
        meta["remote_cache"] = {"url": ", ".join(sorted(set(c["url"] for c in caches))),
                                "hits": sum(c["hits"] for c in caches),
                                "processes": sum(c["processes"] for c in caches),
                                "internal": sum(c["internal"] for c in caches),
                                "bazel_runs": sum(c["bazel_runs"] for c in caches)}
    return meta


def merge(dirs, out):
    """Shard reports -> one report: every selected cell exactly once."""
    if os.path.realpath(out) in [os.path.realpath(d) for d in dirs]:
        raise Usage("--out %s is one of the reports to merge; write the merged report elsewhere" % shown(out))
    docs = read_reports(dirs)
    check_shards(docs)
    # the merged report: cells in the matrix's order, logs copied along
    order = dict((c.name, i) for i, c in enumerate(all_cells()))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "logs"))
    merged, shards = [], []
    for d, doc, cells, meta in docs:
        spec = meta.get("shard", {}).get("spec", "1/1")
        sub = "shard-" + spec.replace("/", "-of-")
        for c in cells:
            src = os.path.join(d, c.log)
            if os.path.isfile(src):
                dst = os.path.join(out, c.log)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copyfile(src, dst)
            merged.append(c)
        for extra in ("deps.log", "prepare.log"):
            src = os.path.join(d, "logs", extra)
            if os.path.isfile(src):
                os.makedirs(os.path.join(out, "logs", sub), exist_ok=True)
                shutil.copyfile(src, os.path.join(out, "logs", sub, extra))
        shards.append({"shard": spec, "dir": shown(d), "cells": len(cells), "elapsed_s": meta["elapsed_s"],
                       "finished": meta["finished"], "host": meta["host"], "machine": meta.get("machine"),
                       "args": meta["args"], "remote_cache": meta.get("remote_cache"), "git": meta.get("git")})
    merged.sort(key=lambda c: order[c.name])
    shards.sort(key=lambda s: (int(s["shard"].split("/")[1]), int(s["shard"].split("/")[0]), s["dir"]))
    meta = merged_meta(docs, dirs, merged, shards)
    write_json(merged, meta, out)
    write_md(merged, meta, out)
    write_html(merged, meta, out)
    n = counts(merged)
    for line in shard_lines(meta):
        print("ci/matrix: " + line)
    print("ci/matrix: merged %d reports, %d cells: %d PASS, %d FAIL, %d SKIPPED; report: %s/report.{md,json,html}" % (
        len(docs), len(merged), n["PASS"], n["FAIL"], n["SKIPPED"], shown(out)))
    print("%d passed, %d failed, %d skipped" % (n["PASS"], n["FAIL"], n["SKIPPED"]))
    return 1 if n["FAIL"] else 0
