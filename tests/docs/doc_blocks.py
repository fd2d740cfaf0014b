#!/usr/bin/env python3
"""Every C and C++ code block of the guides, compiled and run.

Blocks are fenced as in Markdown: ```c, ```c++ or ```cpp, up to ```. In a
header the fences sit in a comment (` * ```c` in a C comment, `// ```c++`
in C++ comments) and the comment's leader is stripped from each line.

A block is compiled against the single header, the file users vendor:
  - a whole program (it defines main) as it is;
  - a block that defines TICKCLOCK_IMPLEMENTATION as its own translation
    unit (with an empty main), linked with nothing else;
  - any other block is a fragment: its preprocessor lines go to the top,
    the rest into main(), after a prelude that stands in for the user's
    code (`run_node(row)`, `scan()`, `work()`) and includes the standard
    headers the examples print with; every other program links one object
    that holds the implementation.
Every program is run and must exit 0 (within 30 s); its output is shown.
Warnings are errors, except unused variables and functions (a fragment
shows a result it does not use).

usage: doc_blocks.py --header SINGLE_HEADER [--list] FILE...
Ends with "doc blocks: N compiled, N run, N printed; N passed, N failed".
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(c|c\+\+|cpp)\s*$")
LANG = {"c": "c", "c++": "c++", "cpp": "c++"}

PRELUDE_C = """#include <stdint.h>
#include <stdio.h>
static int row = 1;
static volatile unsigned long long tkd_sink;
static void run_node(int r) { for (int k = 0; k < 100; k++) tkd_sink += (unsigned long long)(r + k); }
static void scan(void) { run_node(2); }
static void work(void) { run_node(3); }
"""
PRELUDE_CXX = """#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
static int row = 1;
static volatile unsigned long long tkd_sink;
static void run_node(int r) { for (int k = 0; k < 100; k++) tkd_sink += static_cast<unsigned long long>(r + k); }
static void scan() { run_node(2); }
static void work() { run_node(3); }
"""
WARN = ["-Wall", "-Wextra", "-Werror", "-Wno-unused-variable", "-Wno-unused-function",
        "-Wno-unused-but-set-variable"]


def blocks(path):
    """(line, lang, text) for each fenced C or C++ block of the file."""
    out = []
    header = not path.endswith(".md")
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        raw = lines[i]
        lead = ""
        text = raw
        if header:
            m = re.match(r"^(\s*(?:/\*|\*|//) ?)(.*)$", raw)
            if not m:
                i += 1
                continue
            lead, text = m.group(1), m.group(2)
        m = FENCE.match(text)
        if not m:
            i += 1
            continue
        start, lang, body = i + 1, LANG[m.group(1)], []
        i += 1
        while i < len(lines):
            t = lines[i]
            if header:
                # the same leader, or the leader without its trailing space
                # for an empty line
                if t.startswith(lead):
                    t = t[len(lead):]
                elif t.rstrip() == lead.rstrip():
                    t = ""
                else:
                    raise SystemExit("%s:%d: a fenced block's line lost the comment's leader '%s'"
                                     % (path, i + 1, lead))
            if t.strip() == "```":
                break
            body.append(t)
            i += 1
        else:
            raise SystemExit("%s:%d: a fenced block is not closed" % (path, start))
        out.append((start, lang, "\n".join(body) + "\n"))
        i += 1
    return out


def program(lang, text):
    """(source, links_implementation) for a block."""
    if re.search(r"\bint\s+main\s*\(", text):
        return text, "TICKCLOCK_IMPLEMENTATION" not in text
    top = [l for l in text.split("\n") if l.lstrip().startswith("#")]
    rest = [l for l in text.split("\n") if not l.lstrip().startswith("#")]
    if "TICKCLOCK_IMPLEMENTATION" in text:
        return "\n".join(top) + "\nint main(void) { return 0; }\n", False
    if not any("tickclock.h" in l or "tickclock.hpp" in l for l in top):
        top.append('#include "tickclock.h"')
    # the C++ API's own header, in the single header's world, is tickclock.h
    top = [l.replace('"tickclock.hpp"', '"tickclock.h"') for l in top]
    prelude = PRELUDE_C if lang == "c" else PRELUDE_CXX
    body = "\n".join("  " + l if l else l for l in rest)
    sig = "int main(void)" if lang == "c" else "int main()"
    return "%s%s\n%s {\n%s\n  return 0;\n}\n" % (prelude, "\n".join(top), sig, body), True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--header", required=True, help="the single header (tickclock.h)")
    ap.add_argument("--list", action="store_true", help="print each block's program, compile nothing")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    cxx = os.environ.get("CXX") or shutil.which("c++") or "g++"
    found = []
    for f in args.files:
        for line, lang, text in blocks(f):
            found.append(("%s:%d" % (os.path.relpath(f), line), lang, text))
    if args.list:
        for where, lang, text in found:
            print("==== %s (%s)\n%s" % (where, lang, program(lang, text)[0]))
        print("doc blocks: %d" % len(found))
        return 0
    work = tempfile.mkdtemp(prefix="doc_blocks.")
    inc = os.path.join(work, "include")
    os.makedirs(inc)
    shutil.copy(args.header, os.path.join(inc, "tickclock.h"))
    impl_c = os.path.join(work, "impl.c")
    with open(impl_c, "w") as f:
        f.write('#define TICKCLOCK_IMPLEMENTATION\n#include "tickclock.h"\n')
    impl_o = os.path.join(work, "impl.o")
    r = subprocess.run([cc, "-std=c99", "-O1", "-I", inc, "-c", impl_c, "-o", impl_o],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode != 0:
        print(r.stdout)
        print("FAIL the single header's implementation does not compile")
        print("0 passed, 1 failed")
        return 1
    passed = failed = compiled = ran = printed = 0
    for n, (where, lang, text) in enumerate(found):
        src, link_impl = program(lang, text)
        ext = ".c" if lang == "c" else ".cc"
        path = os.path.join(work, "block%d%s" % (n, ext))
        exe = os.path.join(work, "block%d" % n)
        with open(path, "w") as f:
            f.write(src)
        std = ["-std=c99", "-pedantic"] if lang == "c" else ["-std=c++11", "-pedantic"]
        cmd = [cc if lang == "c" else cxx] + std + WARN + ["-I", inc, path]
        cmd += ([impl_o] if link_impl else []) + ["-pthread", "-lm", "-o", exe]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        if r.returncode != 0:
            failed += 1
            print("FAIL %s (%s): does not compile\n%s\n--- the program:\n%s" % (where, lang, r.stdout, src))
            continue
        compiled += 1
        try:
            r = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True, timeout=30)
        except subprocess.TimeoutExpired:
            failed += 1
            print("FAIL %s (%s): still running after 30 s" % (where, lang))
            continue
        ran += 1
        if r.stdout.strip():
            printed += 1
        if r.returncode != 0:
            failed += 1
            print("FAIL %s (%s): exit %d\n%s" % (where, lang, r.returncode, r.stdout))
            continue
        passed += 1
        out = r.stdout.strip()
        print("ok   %s (%s)%s" % (where, lang, (": " + out.replace("\n", " | ")[:300]) if out else ""))
    shutil.rmtree(work, ignore_errors=True)
    print("doc blocks: %d compiled, %d run, %d printed" % (compiled, ran, printed))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
