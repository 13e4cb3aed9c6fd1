# Sourced by the benchmark scripts: the peers (SciPy, scikit-learn, FAISS)
# with a fair BLAS, on any x86 machine.
#
#   . bench/peers.sh        installs what is missing (apt-get, as root or
#                           with sudo), exports OPENBLAS_CORETYPE when the CPU
#                           needs it, and prints which BLAS core the peers run
#
# Debian's default reference BLAS is about 6x slower than OpenBLAS, so the
# peers get libopenblas0-pthread. OpenBLAS misdetects some AVX-512 Xeons as
# Prescott (no vector kernels at all): there SkylakeX is forced. On AVX2-only
# CPUs (e.g. AMD EPYC Rome/Milan) forcing SkylakeX crashes, and OpenBLAS's own
# detection is right, so nothing is set. The choice is made from the CPU's
# flags here, in benchmark commands only, never in tests or CI.
lbk_peers_opts=$(set +o)   # common.sh sets -euo pipefail; the caller's options come back below
lbk_peers_root=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)
# shellcheck source=../scripts/common.sh
. "$lbk_peers_root/scripts/common.sh"

lbk_install python3-numpy python3-scipy python3-sklearn python3-faiss python3-threadpoolctl \
    libopenblas0-pthread

# lbk_blas_coretype: the OPENBLAS_CORETYPE this CPU should run with, or empty.
lbk_blas_coretype() {
    local flags f
    flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    for f in avx512f avx512dq avx512bw avx512vl; do
        case $flags in *" $f "*) ;; *) return 0 ;; esac
    done
    echo SkylakeX
}

# The flags decide even where the environment already names a core (a
# machine image was seen exporting OPENBLAS_CORETYPE=Haswell on an AVX-512
# Zen 5): a peer must run the kernels its CPU has.
lbk_core=$(lbk_blas_coretype)
if [ -n "$lbk_core" ]; then
    export OPENBLAS_CORETYPE=$lbk_core
else
    unset OPENBLAS_CORETYPE
fi

# One line saying what the peers will run with, for every results table.
lbk_peers_describe() {
    /usr/bin/python3 - <<'PY'
import os, platform, numpy, scipy, sklearn, faiss
from threadpoolctl import threadpool_info
cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')
blas = [f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} x{i.get('num_threads')}"
        for i in threadpool_info() if i.get('user_api') == 'blas']
print(f"# peers: numpy {numpy.__version__}, scipy {scipy.__version__}, scikit-learn "
      f"{sklearn.__version__}, faiss {faiss.__version__}; BLAS {'; '.join(blas) or 'none found'}; "
      f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; CPU {cpu}")
PY
}
eval "$lbk_peers_opts"
