#!/usr/bin/env python3
"""Runs every shell and Python block of the README and of docs/*.md, so the documentation cannot
drift from the program.

Each file's blocks run in order in one scratch directory of their own, which holds `build` (the
build tree), `data`, `scripts`, `bench` and `examples` as links into the repository, so a block runs
as written from the repository's root; `uqnn` is also on PATH. A block fails the test when it exits
non-zero. A block that must not run here (the set-up commands, which are the CI itself; templates
with `...`; hour-long reproductions) is preceded by an HTML comment giving the reason:
`<!-- not run: REASON -->`. Blocks in other languages (stan, toml, text) are not run.

Usage: run_doc_blocks.py REPO BUILD [FILE.md ...]   (default: README.md and docs/*.md)
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^```(\w*)\s*$")
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->")
RUN_LANGUAGES = {"sh": "bash", "bash": "bash", "python": "python"}


def blocks(path):
    """(line, language, code, reason not to run or None) of every fenced block; the reason is an
    HTML comment on the last non-blank line before the block."""
    lines = open(path, encoding="utf-8").read().splitlines()
    out, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        reason = NOT_RUN.search(before)
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        out.append((start, fence.group(1), "\n".join(body) + "\n", reason.group(1) if reason else None))
        i += 1
    return out


def scratch_dir(repo, build):
    work = tempfile.mkdtemp(prefix="uqnn-doc-blocks-")
    os.symlink(build, os.path.join(work, "build"))
    for name in ("data", "scripts", "bench", "examples", "tests"):
        os.symlink(os.path.join(repo, name), os.path.join(work, name))
    return work


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    repo, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    files = sys.argv[3:] or [os.path.join(repo, "README.md")] + sorted(glob.glob(os.path.join(repo, "docs", "*.md")))
    # The Python a user runs after the set-up command: Debian's python3 (with the venv the Python
    # tests make beside the build, which adds ArviZ to Debian's packages, when it is there).
    candidates = [os.environ.get("UQNN_DOCS_PYTHON"), os.path.join(build, "pyenv", "bin", "python"), "/usr/bin/python3", sys.executable]
    python = next(c for c in candidates if c and os.path.exists(c))
    env = dict(os.environ, PATH=build + os.pathsep + os.environ.get("PATH", ""),
               PYTHONPATH=os.path.join(build, "python"), MPLBACKEND="Agg")
    failures, ran, skipped = [], 0, 0
    for path in files:
        work = None
        for line, language, code, reason in blocks(path):
            name = f"{os.path.relpath(path, repo)}:{line}"
            if language not in RUN_LANGUAGES:
                continue
            if reason:
                print(f"not run  {name}: {reason}")
                skipped += 1
                continue
            work = work or scratch_dir(repo, build)
            command = ["bash", "-euo", "pipefail", "-c", code] if RUN_LANGUAGES[language] == "bash" else [python, "-c", code]
            start = time.monotonic()
            proc = subprocess.run(command, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            seconds = time.monotonic() - start
            ran += 1
            status = "ok" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
            print(f"{status:<8} {name} ({language}, {seconds:.1f} s)")
            if proc.returncode != 0:
                failures.append(name)
                print("---- block ----\n" + code + "---- output (last 60 lines) ----")
                print("\n".join(proc.stdout.splitlines()[-60:]))
        if work:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{ran} block(s) ran, {skipped} not run (with a reason), {len(failures)} failed")
    if ran == 0:
        print("no block ran: the files hold no runnable block, or the parser is broken")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
