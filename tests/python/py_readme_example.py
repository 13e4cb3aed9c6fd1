"""python.readme_example: the README's Python examples as a reader runs
them: the command block after each "<!-- example: python ... -->" marker
runs, as written, with bash in a scratch directory that looks like the
repository's root after the normal build (build is this build tree), and
what it prints must be the output block after the matching "... output"
marker.

    py_readme_example.py README BUILD_DIR"""
import os
import subprocess
import sys
import tempfile

from lbk_pytest import check, finish, require

require("mpi4py")

readme, build = sys.argv[1], sys.argv[2]
lines = open(readme, encoding="utf-8").read().split("\n")


def block(name):
    """The fenced block right after the line "<!-- example: NAME -->"."""
    marker = f"<!-- example: {name} -->"
    at = [i for i, line in enumerate(lines) if line == marker]
    if not check(len(at) == 1, f"{readme} has {len(at)} lines '{marker}' (want 1)"):
        return None
    i = at[0] + 1
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
        check(got == want, f"{name}: prints {got}, the README says {want}")
finish()
