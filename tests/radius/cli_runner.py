"""`lbknn run` on a job text, for the radius CLI tests (radius_cli.py,
radius_votes_cli.py): writes the job, runs it on 1 or more ranks, and
counts what failed."""

import os
import subprocess


class Runner:
    def __init__(self, lbknn, mpiexec, work):
        self.lbknn, self.mpiexec, self.work = lbknn, mpiexec, work
        self.failed = 0

    def run(self, name, ranks, job, expect=0):
        # expect < 0: any failure will do, only success is wrong.
        path = os.path.join(self.work, name + ".yaml")
        with open(path, "w") as f:
            f.write(job)
        cmd = [self.lbknn, "run", path]
        if ranks > 1:
            cmd = [self.mpiexec, "-n", str(ranks)] + cmd
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=self.work)
        if (p.returncode != expect) if expect >= 0 else p.returncode == 0:
            self.fail(f"{name}: exit {p.returncode}, expected {expect}\n{p.stdout}{p.stderr}")
        return p

    def fail(self, why):
        print("FAILED:", why)
        self.failed += 1

    def path(self, name):
        return os.path.join(self.work, name)
