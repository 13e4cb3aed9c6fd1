"""python.readme_example: the Python examples of the README and docs/python.md
as a reader runs them: the command block after each "<!-- example: python
... -->" marker (the README's "python", docs/python.md's "python mpi"; each
marker on exactly one line of all the files) runs, as written, with bash in
a scratch directory that looks like the repository's root after the normal
build (build is this build tree), and what it prints must be the output
block after the matching "... output" marker.

    py_readme_example.py BUILD_DIR DOC..."""
import os
import subprocess
import sys
import tempfile

from lbk_pytest import check, finish, require

require("mpi4py")

build, docs = sys.argv[1], sys.argv[2:]
texts = {doc: open(doc, encoding="utf-8").read().split("\n") for doc in docs}


def block(name):
    """The fenced block right after the line "<!-- example: NAME -->"."""
    marker = f"<!-- example: {name} -->"
    at = [(doc, i) for doc, lines in texts.items() for i, line in enumerate(lines) if line == marker]
    if not check(len(at) == 1, f"{' and '.join(docs)} have {len(at)} lines '{marker}' (want 1)"):
        return None
    doc, i = at[0]
    lines = texts[doc]
    i += 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    if not check(i < len(lines) and lines[i].startswith("```"), f"no block after '{marker}'"):
        return None
    end = lines.index("```", i + 1)
    return "\n".join(lines[i + 1:end]) + "\n"


for name in ("python", "python mpi"):
    command, expected = block(name), block(f"{name} output")
    if command is None or expected is None:
        continue
    with tempfile.TemporaryDirectory() as work:
        os.symlink(os.path.abspath(build), os.path.join(work, "build"))
        print(f"+ {name}:\n{command}", flush=True)
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=work,
                             capture_output=True, text=True)
        print(run.stdout, run.stderr[-3000:], flush=True)
        check(run.returncode == 0, f"{name}: exit {run.returncode}")
        got, want = run.stdout.splitlines(), expected.splitlines()
        check(got == want, f"{name}: prints {got}, the docs say {want}")
finish()
