#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gen-docs.py - build docs/*.md from docs/src/*.md by running every example.

    scripts/gen-docs.py PATC           rewrite README.md and docs/{language,pir,cli,status}.md
    scripts/gen-docs.py PATC --check   exit 1 (with a diff) when they are stale

A template may hold two markers:
  <<<FILE path>>>  the text of PATH (in the scratch copy described below) in a
                   fenced block;
  <<<RUN cmd>>>    "$ cmd" and what it prints (stdout and stderr together),
                   run with PATC on PATH.
Commands run in a scratch copy of docs/src/examples that also holds copies of
stdlib/ and examples/, with PATC_STDLIB=stdlib, so the output is the same on
every machine and a command that writes files changes nothing in the tree.
"""
import difflib, os, re, shutil, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "docs", "src")
# template (in docs/src) -> page (in the tree)
PAGES = {"language.md": "docs/language.md", "pir.md": "docs/pir.md", "cli.md": "docs/cli.md",
         "status.md": "docs/status.md", "README.md": "README.md"}


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    if len(args) != 1:
        sys.exit(__doc__)
    patc = os.path.abspath(args[0])
    check = "--check" in sys.argv[1:]
    # a missing binary would put "patc: command not found" into every page
    if not (os.path.isfile(patc) and os.access(patc, os.X_OK)):
        sys.exit(f"gen-docs: {args[0]} is not an executable patc")
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "examples")
        shutil.copytree(os.path.join(SRC, "examples"), work)
        shutil.copytree(os.path.join(ROOT, "stdlib"), os.path.join(work, "stdlib"))
        shutil.copytree(os.path.join(ROOT, "examples"), os.path.join(work, "examples"))
        bindir = os.path.join(tmp, "bin")
        os.mkdir(bindir)
        os.symlink(patc, os.path.join(bindir, "patc"))
        env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"], PATC_STDLIB="stdlib")

        def run(cmd):
            # stderr joins stdout; patc colours nothing when it is not a terminal
            real = "( " + cmd + " ) 2>&1"
            p = subprocess.run(["bash", "-c", real], cwd=work, env=env,
                               capture_output=True, text=True)
            out = p.stdout
            if out and not out.endswith("\n"):
                out += "\n"
            return "```console\n$ %s\n%s```" % (cmd, out)

        def show(path):
            with open(os.path.join(work, path)) as f:
                text = f.read()
            lang = "text" if path.endswith(".pir") else "pat"
            return "`%s`:\n```%s\n%s```" % (path, lang, text)

        def expand(m):
            return run(m.group(2).strip()) if m.group(1) == "RUN" else show(m.group(2).strip())

        stale = False
        for page, target in PAGES.items():
            with open(os.path.join(SRC, page)) as f:
                out = re.sub(r"<<<(RUN|FILE) (.*?)>>>", expand, f.read())
            dest = os.path.join(ROOT, target)
            old = open(dest).read() if os.path.exists(dest) else ""
            if old == out:
                continue
            if check:
                stale = True
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), out.splitlines(True), target, "generated"))
            else:
                with open(dest + ".tmp", "w") as f:
                    f.write(out)
                os.replace(dest + ".tmp", dest)
        if stale:
            print("docs are stale: run 'make docs'")
            return 1
        print("docs: %d pages up to date" % len(PAGES))
        return 0


if __name__ == "__main__":
    sys.exit(main())
