#!/usr/bin/python3
"""kneighbors(X=None) under mpi4py: what each rank holds (issue 39). Run
under `mpirun -n P`; each rank fits its own share of N seeded points of DIM
dimensions (float32), then asks every point's K nearest others, and prints
its peak RSS (getrusage) above what it held before the call, with the
sizes that make it up: the rank's own points, every rank's points (what
gathering the fitted rows to every rank costs), and the result itself
(N x K ids and distances, every row on every rank, the API's contract).

    mpirun -n 2 --bind-to core /usr/bin/python3 bench/python_self_memory.py [N] [DIM] [K]
"""
import resource
import sys
import time

import numpy as np
from mpi4py import MPI

import lbknn

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000
dim = int(sys.argv[2]) if len(sys.argv) > 2 else 16
k = int(sys.argv[3]) if len(sys.argv) > 3 else 10
lo, hi = n * rank // size, n * (rank + 1) // size
X = np.random.default_rng(42 + rank).random((hi - lo, dim), dtype=np.float32)
nn = lbknn.NearestNeighbors(n_neighbors=k, algorithm="kd_tree", comm=comm).fit(X)
nn.kneighbors(X[:10])  # the index built and the device warm before the measure
comm.Barrier()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
t0 = time.perf_counter()
dist, ids = nn.kneighbors()
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
mib = 1 / 1024
rows = comm.gather((rank, (peak - before) * mib, peak * mib, seconds))
if rank == 0:
    own = n / size * dim * 4 / 2**20
    print(f"N={n} dim={dim} K={k} P={size} (lbknn {lbknn.__version__}): own points "
          f"{own:.0f} MiB, every rank's points {n * dim * 4 / 2**20:.0f} MiB, the result "
          f"{n * k * 16 / 2**20:.0f} MiB")
    for r, grown, total, s in rows:
        print(f"  rank {r}: peak RSS {total:.0f} MiB, {grown:.0f} MiB above before the call; "
              f"kneighbors() {s:.2f} s")
