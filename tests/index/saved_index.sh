#!/bin/bash
# A saved index (`lbknn build`, index.path): loading it gives the outputs of
# a run that reads the reference file and builds, byte for byte, and an
# index that does not fit the run is refused with one line naming why.
#
# usage: saved_index.sh same LBKNN MPIEXEC NP ENGINE PARTITION [TASK]
#            build with NP ranks, hide the reference file, run from the
#            index; cmp every output with a plain NP-rank run
#        saved_index.sh ranks LBKNN MPIEXEC ENGINE PARTITION [TASK [each]]
#            build with 3 ranks, hide the reference file, run from the
#            index on 1, 2 and 4; cmp every output with a plain run on 3
#            ranks (each: on as many ranks as the load)
#        saved_index.sh other_ranks LBKNN MPIEXEC NP [FIXTURE]
#            the refusal cases' index (2 ranks) loads on NP ranks with the
#            reference file's path pointing nowhere: outputs as a plain
#            NP-rank run's (a saved index used to be refused on another
#            rank count); and on 1 rank with mpi.partition: auto, which is
#            spatial on the 2 saved ranks but shard on 1; its manifest
#            without the type line, as before compact points (format 1)
#        saved_index.sh empty_shards LBKNN MPIEXEC
#            3 points, the k-d tree's row shards: built on 2 ranks, loaded
#            on 4 (one shard empty); cmp with a plain run of one process
#        saved_index.sh refuse LBKNN MPIEXEC CASE [FIXTURE]
#            CASE metric|split|engine|version|corrupt|missing|type|dim: the
#            run exits non-zero with the case's line and writes no output;
#            the index is a copy of FIXTURE's where FIXTURE was made (else
#            built here)
#        saved_index.sh fixture LBKNN MPIEXEC FIXTURE
#            the data set and the index every refusal case starts from,
#            made once into FIXTURE (a CTest fixture: one build, not eight)
#        saved_index.sh compact LBKNN MPIEXEC TYPE PARTITION LOADS [ENGINE]
#            TYPE (uint8, int8, float16) points (.npy), ENGINE (brute, the
#            default, or kdtree): built on 2 ranks at their own width, no
#            point widened (the manifest's format 2 and type, each part's
#            points or tree_points a compact row's size), loaded on each
#            of LOADS ("1 2 3") rank counts with the reference file
#            hidden: every output byte-identical to a fresh 2-rank run's,
#            which equals the exact integer oracle (float64's for float16);
#            reference.type float32 refused in one line naming both types;
#            task graph from the index keeps the loaded points compact, as
#            a fresh graph run keeps what it reads: the same graph
#        saved_index.sh rebuild LBKNN MPIEXEC
#            an index of 2 ranks run with 3, another tree.split and
#            index.rebuild: true is rebuilt (outputs as a plain run's) and
#            saved for 3 and that split; on 2 ranks with index.rebuild it
#            loads and is not saved over
set -u
mode=$1 lbknn=$2 mpiexec=$3
shift 3
dir=$(mktemp -d "${TMPDIR:-/tmp}/lbk-saved.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
generate() { # DIR
    "$lbknn" generate "$1" --points 1500 --queries 200 --dim 5 >/dev/null ||
        { echo "lbknn generate failed"; exit 1; }
}
# The refusal cases' index: 2 ranks, the k-d tree, the spatial partition.
refuse_build=(--set knn.engine=kdtree --set mpi.partition=spatial)
build_refusal_index() { # DATA INDEX
    "$mpiexec" -n 2 "$lbknn" build --quiet "$1/job.yaml" --set "index.path=$2" \
        --set device.batch=64 "${refuse_build[@]}" || { echo "build failed"; exit 1; }
}
if [ "$mode" = fixture ]; then
    # Made in place (the manifest names the reference file by its path);
    # "complete" says it was all made.
    rm -rf "$1"
    mkdir -p "$1"
    generate "$1/data"
    build_refusal_index "$1/data" "$1/idx"
    touch "$1/complete"
    echo "ok: the refusal cases' index is in $1"
    exit 0
fi
data=$dir/data built=
if { [ "$mode" = refuse ] || [ "$mode" = other_ranks ]; } && [ -n "${2:-}" ] &&
    [ -f "$2/complete" ]; then
    # Each case changes its own copy of the index; the data set is only read.
    data=$2/data built=1
    cp -r "$2/idx" "$dir/idx" || exit 1
elif [ "$mode" != empty_shards ]; then
    generate "$data"
fi
job=$data/job.yaml
idx=(--set "index.path=$dir/idx" --set device.batch=64)

outputs() { # DIR TASK
    if [ "$2" = graph ]; then
        printf -- '--set\noutput.graph=%s\n' "$1/graph.npz"
        return
    fi
    printf -- '--set\noutput.%s=%s\n' neighbors "$1/n.ivecs" distances "$1/d.fvecs"
    [ "$2" = regress ] && printf -- '--set\noutput.predictions=%s\n' "$1/p.csv"
    [ "$2" = classify ] && printf -- '--set\noutput.%s=%s\n' predictions "$1/p.csv" \
        probabilities "$1/pr.csv"
}

# Task regress: the labels as targets (a file of one number per row).
write_targets() {
    /usr/bin/python3 -c "import numpy as np
for n in ('reference','query'):
    a=np.fromfile('$dir/data/'+n+'-labels.ivecs',dtype=np.int32).reshape(-1,2)[:,1]
    np.savetxt('$dir/data/'+n+'-targets.txt',a*0.5+1,fmt='%.3f')" ||
        { echo "writing the targets failed"; exit 1; }
}

if [ "$mode" = empty_shards ]; then
    "$lbknn" generate "$dir/data" --points 3 --queries 10 --dim 3 --classes 2 >/dev/null ||
        { echo "lbknn generate failed"; exit 1; }
    run=(--set knn.k=2 --set knn.engine=kdtree --set mpi.partition=shard --set device.batch=64)
    mapfile -t out_load < <(outputs "$dir/load" classify)
    mapfile -t out_plain < <(outputs "$dir/plain" classify)
    mkdir "$dir/load" "$dir/plain"
    "$mpiexec" -n 2 "$lbknn" build --quiet "$dir/data/job.yaml" --set "index.path=$dir/idx" \
        "${run[@]}" || { echo "build failed"; exit 1; }
    "$lbknn" run --quiet "$dir/data/job.yaml" "${run[@]}" "${out_plain[@]}" ||
        { echo "plain run failed"; exit 1; }
    mv "$dir/data/reference.fvecs" "$dir/hidden.fvecs"
    "$mpiexec" -n 4 "$lbknn" run --quiet "$dir/data/job.yaml" --set "index.path=$dir/idx" \
        "${run[@]}" "${out_load[@]}" || { echo "run from the index on 4 ranks failed"; exit 1; }
    for f in "$dir"/plain/*; do
        cmp "$f" "$dir/load/$(basename "$f")" || { echo "$(basename "$f") differs"; exit 1; }
    done
    echo "3 points built on 2 ranks, loaded on 4 (an empty shard): outputs identical"
    exit 0
fi
if [ "$mode" = same ] || [ "$mode" = ranks ]; then
    if [ "$mode" = same ]; then
        np=$1 loads=$1 plains=$1
        shift
    else
        # The outputs are the same on any rank count (tests/e2e): one
        # plain run on 3 ranks is every load's reference, unless `each`.
        np=3 loads="1 2 4" plains=3
        [ "${4:-}" = each ] && plains=$loads
    fi
    engine=$1 partition=$2 task=${3:-classify}
    run=(--set knn.engine="$engine" --set mpi.partition="$partition" --set task="$task")
    if [ "$task" = regress ]; then
        write_targets
        run+=(--set "reference.targets=$dir/data/reference-targets.txt"
            --set "query.targets=$dir/data/query-targets.txt")
    fi
    [ "$task" = graph ] && run+=(--set query.path= --set query.labels=)
    "$mpiexec" -n "$np" "$lbknn" build --quiet "$job" "${idx[@]}" "${run[@]}" ||
        { echo "build failed"; exit 1; }
    grep -q "^ranks = $np$" "$dir/idx/manifest.txt" || { echo "manifest: not $np ranks"; exit 1; }
    for p in $plains; do
        mapfile -t out_plain < <(outputs "$dir/plain$p" "$task")
        mkdir "$dir/plain$p"
        "$mpiexec" -n "$p" "$lbknn" run --quiet "$job" --set device.batch=64 "${run[@]}" \
            "${out_plain[@]}" || { echo "plain run on $p rank(s) failed"; exit 1; }
        [ -n "$(ls "$dir/plain$p")" ] || { echo "no outputs"; exit 1; }
    done
    # The loading runs must not need the reference points.
    mv "$dir/data/reference.fvecs" "$dir/hidden.fvecs"
    status=0
    for p in $loads; do
        mapfile -t out_load < <(outputs "$dir/load$p" "$task")
        mkdir "$dir/load$p"
        "$mpiexec" -n "$p" "$lbknn" run --quiet "$job" "${idx[@]}" "${run[@]}" "${out_load[@]}" ||
            { echo "run from the saved index on $p rank(s) failed"; exit 1; }
        plain=$dir/plain$p
        [ -d "$plain" ] || plain=$dir/plain$np
        for f in "$plain"/*; do
            b=$(basename "$f")
            cmp "$f" "$dir/load$p/$b" ||
                { echo "P=$p: $b differs from the plain run's"; status=1; }
        done
        [ $status = 0 ] && echo "built on $np, loaded on $p: $engine $partition $task:" \
            "outputs identical to a plain run's on $(basename "$plain" | tr -d a-z) rank(s)"
    done
    exit $status
fi

if [ "$mode" = other_ranks ]; then
    np=$1
    [ -n "$built" ] || build_refusal_index "$data" "$dir/idx"
    # As written before compact points: format 1 had no type line.
    grep -q '^format = 1$' "$dir/idx/manifest.txt" && sed -i '/^type = float32$/d' "$dir/idx/manifest.txt"
    grep -q '^type' "$dir/idx/manifest.txt" && { echo "a float32 index not in format 1"; exit 1; }
    mkdir "$dir/load" "$dir/plain"
    "$mpiexec" -n "$np" "$lbknn" run --quiet "$job" "${idx[@]}" "${refuse_build[@]}" \
        --set "reference.path=$dir/absent.fvecs" --set "output.neighbors=$dir/load/n.ivecs" \
        --set "output.distances=$dir/load/d.fvecs" ||
        { echo "run from the 2-rank index on $np ranks failed"; exit 1; }
    "$mpiexec" -n "$np" "$lbknn" run --quiet "$job" --set device.batch=64 "${refuse_build[@]}" \
        --set "output.neighbors=$dir/plain/n.ivecs" --set "output.distances=$dir/plain/d.fvecs" ||
        { echo "plain run failed"; exit 1; }
    cmp "$dir/plain/n.ivecs" "$dir/load/n.ivecs" && cmp "$dir/plain/d.fvecs" "$dir/load/d.fvecs" ||
        { echo "outputs differ"; exit 1; }
    echo "the 2-rank index loads on $np ranks: outputs identical"
    mkdir "$dir/load1"
    "$mpiexec" -n 1 "$lbknn" run --quiet "$job" "${idx[@]}" --set knn.engine=kdtree \
        --set mpi.partition=auto --set "reference.path=$dir/absent.fvecs" \
        --set "output.neighbors=$dir/load1/n.ivecs" --set "output.distances=$dir/load1/d.fvecs" ||
        { echo "run from the 2-rank index on 1 rank with mpi.partition: auto failed"; exit 1; }
    cmp "$dir/plain/n.ivecs" "$dir/load1/n.ivecs" &&
        cmp "$dir/plain/d.fvecs" "$dir/load1/d.fvecs" || { echo "outputs on 1 rank differ"; exit 1; }
    echo "and on 1 rank with mpi.partition: auto (spatial saved, shard here): outputs identical"
    exit 0
fi

out=(--set "output.neighbors=$dir/n.ivecs")
expect_refusal() { # WHAT REGEX [run args...]   (NP ranks, default 2)
    local what=$1 regex=$2
    shift 2
    "$mpiexec" -n "${NP:-2}" "$lbknn" run --quiet "$job" "${idx[@]}" "${out[@]}" "$@" \
        >"$dir/stdout" 2>"$dir/stderr"
    local rc=$?
    [ $rc -eq 2 ] || { echo "$what: exit status $rc, not 2"; cat "$dir/stderr"; exit 1; }
    grep -Eq "$regex" "$dir/stderr" ||
        { echo "$what: no line matching '$regex' in:"; cat "$dir/stderr"; exit 1; }
    [ ! -e "$dir/n.ivecs" ] || { echo "$what: an output was written"; exit 1; }
    echo "$what refused on ${NP:-2} rank(s): $(grep -E "$regex" "$dir/stderr" | head -n 1)"
}

if [ "$mode" = refuse ]; then
    # Every rank refuses and exits 2 by itself; Open MPI's mpirun would
    # still wait odls_base_sigkill_timeout (default 1 s) twice before it
    # ends the job's processes, which had left (1.7 s of each case's 2.2).
    # Not in the sanitized pass (ASAN_OPTIONS set): there the ranks run
    # their leak check as they exit, after MPI_Finalize.
    [ -n "${ASAN_OPTIONS:-}" ] || export OMPI_MCA_odls_base_sigkill_timeout=0
    case=$1
    build=("${refuse_build[@]}")
    [ -n "$built" ] || build_refusal_index "$data" "$dir/idx"
    case $case in
    metric) expect_refusal metric "saved for metric = l2, this run has l1" "${build[@]}" \
        --set knn.metric=l1 ;;
    split) expect_refusal split "saved for split = round_robin, this run has widest" \
        "${build[@]}" --set tree.split=widest ;;
    engine) expect_refusal engine "saved for engine = kdtree, this run has brute" \
        --set knn.engine=brute --set mpi.partition=spatial ;;
    version)
        sed -i 's/^format = 1$/format = 0/' "$dir/idx/manifest.txt"
        expect_refusal version "saved for format = 0, this run has 1" "${build[@]}" ;;
    corrupt)
        f=$dir/idx/r1.tree_points
        printf '\x7f' | dd of="$f" bs=1 seek=100 conv=notrunc status=none
        expect_refusal corrupt "r1.tree_points: saved index: corrupted" "${build[@]}"
        # On another rank count the parts are regrouped (read by other
        # ranks than saved them): every rank still stops with exit 2 and
        # one line names the file.
        NP=3 expect_refusal corrupt "r1.tree_points: saved index: corrupted" "${build[@]}"
        n=$(grep -c "saved index: corrupted" "$dir/stderr")
        [ "$n" = 1 ] || { echo "corrupt on 3 ranks: $n lines name it, not 1"; exit 1; } ;;
    missing)
        rm "$dir/idx/r1.tree_ids"
        expect_refusal missing "r1.tree_ids: saved index: file missing" "${build[@]}" ;;
    type) expect_refusal type "holds float32 points, this run has reference.type uint8" \
        "${build[@]}" --set reference.type=uint8 ;;
    dim)
        "$lbknn" generate "$dir/other" --points 100 --queries 20 --dim 4 >/dev/null || exit 1
        expect_refusal dim "queries have dimension 4 but the saved index .* has 5" \
            "${build[@]}" --set "query.path=$dir/other/query.fvecs" \
            --set "query.labels=$dir/other/query-labels.ivecs" ;;
    *) echo "unknown case $case"; exit 2 ;;
    esac
    exit 0
fi

if [ "$mode" = compact ]; then
    type=$1 partition=$2 loads=$3 engine=${4:-brute}
    file=points
    [ "$engine" = kdtree ] && file=tree_points
    mkdir -p "$dir/data"
    # Equal rows (ties by id) and, for the integers, values near both ends.
    /usr/bin/python3 - "$dir/data" "$type" <<'PY' || { echo "writing the data failed"; exit 1; }
import sys, numpy as np
d, t = sys.argv[1], sys.argv[2]
r = np.random.default_rng(4242); print("seed 4242")
def points(n):
    if t == "float16":
        return r.standard_normal((n, 20)).astype(np.float16)
    lo, hi = (0, 255) if t == "uint8" else (-128, 127)
    x = np.where(r.random((n, 20)) < 0.5, lo + r.integers(0, 6, (n, 20)), hi - r.integers(0, 6, (n, 20)))
    return x.astype(t)
ref, q = points(700), points(50)
ref[7::11] = ref[2]
q[::7] = ref[::97][: len(q[::7])]
np.save(d + "/ref.npy", ref)
np.save(d + "/q.npy", q)
PY
    job=$dir/data/job.yaml
    printf 'task: search\nreference: {path: ref.npy, type: %s}\nquery: {path: q.npy}\nknn: {k: 6, engine: %s}\nmpi: {partition: %s}\n' \
        "$type" "$engine" "$partition" >"$job"
    "$mpiexec" -n 2 "$lbknn" build "$job" "${idx[@]}" >/dev/null 2>"$dir/stderr" ||
        { echo "build failed"; cat "$dir/stderr"; exit 1; }
    ! grep -q widened "$dir/stderr" || { echo "the build widened"; cat "$dir/stderr"; exit 1; }
    grep -q '^format = 2$' "$dir/idx/manifest.txt" && grep -q "^type = $type$" "$dir/idx/manifest.txt" ||
        { echo "manifest: not format 2 of $type points"; cat "$dir/idx/manifest.txt"; exit 1; }
    width=1
    [ "$type" = float16 ] && width=2
    for r in 0 1; do
        rows=$(sed -n "s/^r$r.rows = //p" "$dir/idx/manifest.txt")
        size=$(stat -c %s "$dir/idx/r$r.$file")
        [ "$size" = $((rows * 20 * width)) ] ||
            { echo "r$r.$file: $size bytes for $rows rows of 20 $type values"; exit 1; }
        echo "r$r.$file: $rows rows x 20 x $width bytes = $size bytes (float32: $((rows * 80)))"
    done
    mkdir "$dir/plain"
    "$mpiexec" -n 2 "$lbknn" run --quiet "$job" --set device.batch=64 \
        --set "output.neighbors=$dir/plain/n.ivecs" --set "output.distances=$dir/plain/d.fvecs" ||
        { echo "plain run failed"; exit 1; }
    /usr/bin/python3 - "$dir" "$type" <<'PY' || { echo "the plain run differs from the oracle"; exit 1; }
import sys, numpy as np
d, t = sys.argv[1], sys.argv[2]
ref, q = np.load(d + "/data/ref.npy"), np.load(d + "/data/q.npy")
vecs = lambda p, dt: np.fromfile(p, "<i4").reshape(len(q), -1)[:, 1:].copy().view(dt)
ids, dist = vecs(d + "/plain/n.ivecs", "<i4"), vecs(d + "/plain/d.fvecs", "<f4")
k = ids.shape[1]
if t == "float16":  # float32 arithmetic: float64's order, no near-ties here
    key = ((q.astype(np.float64)[:, None] - ref.astype(np.float64)[None]) ** 2).sum(-1)
else:  # exact integers, ties by id
    key = ((q.astype(np.int64)[:, None] - ref.astype(np.int64)[None]) ** 2).sum(-1)
want = np.lexsort((np.broadcast_to(np.arange(len(ref)), key.shape), key), axis=1)[:, :k]
assert (ids == want).all(), "ids differ"
kk = np.take_along_axis(key, want, 1)
if t == "float16":
    assert np.allclose(dist, np.sqrt(kk), rtol=1e-5), "distances differ"
else:
    assert (dist == np.sqrt(kk.astype(np.float32), dtype=np.float32)).all(), "distances differ"
print("the plain run is the oracle's")
PY
    # A self search (task graph) keeps the compact points, from a fresh run
    # and from the index alike.
    graph=(--set task=graph --set query.path= --set "output.graph=$dir/plain/g.npz")
    "$mpiexec" -n 2 "$lbknn" run --quiet "$job" --set device.batch=64 "${graph[@]}" ||
        { echo "plain graph run failed"; exit 1; }
    mv "$dir/data/ref.npy" "$dir/hidden.npy"
    mkdir "$dir/graph"
    "$mpiexec" -n 2 "$lbknn" run "$job" "${idx[@]}" "${graph[@]/plain/graph}" >/dev/null \
        2>"$dir/stderr" || { echo "graph run from the index failed"; cat "$dir/stderr"; exit 1; }
    ! grep -q "widened to float32" "$dir/stderr" ||
        { echo "the graph run from the index widened"; cat "$dir/stderr"; exit 1; }
    cmp "$dir/plain/g.npz" "$dir/graph/g.npz" || { echo "the graph from the index differs"; exit 1; }
    rm "$dir/plain/g.npz"
    echo "task graph from the $type index (kept compact): the fresh run's graph"
    for p in $loads; do
        mkdir "$dir/load$p"
        "$mpiexec" -n "$p" "$lbknn" run "$job" "${idx[@]}" --set "output.neighbors=$dir/load$p/n.ivecs" \
            --set "output.distances=$dir/load$p/d.fvecs" >/dev/null 2>"$dir/stderr" ||
            { echo "run from the saved index on $p rank(s) failed"; cat "$dir/stderr"; exit 1; }
        grep -q widened "$dir/stderr" && { echo "P=$p: the points were widened"; exit 1; }
        for f in n.ivecs d.fvecs; do
            cmp "$dir/plain/$f" "$dir/load$p/$f" || { echo "P=$p: $f differs"; exit 1; }
        done
        echo "built on 2, loaded on $p: $type $engine $partition outputs identical to a fresh" \
            "run's"
    done
    out=(--set "output.neighbors=$dir/n.ivecs")
    expect_refusal type "index.path: .* holds $type points, this run has reference.type float32" \
        --set reference.type=float32
    exit 0
fi

if [ "$mode" = rebuild ]; then
    run=(--set knn.engine=kdtree --set mpi.partition=spatial --set tree.split=widest)
    "$mpiexec" -n 2 "$lbknn" build --quiet "$job" "${idx[@]}" --set knn.engine=kdtree \
        --set mpi.partition=spatial || { echo "build failed"; exit 1; }
    mapfile -t out_load < <(outputs "$dir/load" classify)
    mapfile -t out_plain < <(outputs "$dir/plain" classify)
    mkdir "$dir/load" "$dir/plain"
    "$mpiexec" -n 3 "$lbknn" run --quiet "$job" "${idx[@]}" "${run[@]}" \
        --set index.rebuild=true "${out_load[@]}" || { echo "rebuilding run failed"; exit 1; }
    grep -q '^ranks = 3$' "$dir/idx/manifest.txt" && grep -q '^split = widest$' "$dir/idx/manifest.txt" ||
        { echo "index not saved for 3 ranks and the split widest"; exit 1; }
    "$mpiexec" -n 3 "$lbknn" run --quiet "$job" --set device.batch=64 "${run[@]}" \
        "${out_plain[@]}" || { echo "plain run failed"; exit 1; }
    for f in "$dir"/plain/*; do
        cmp "$f" "$dir/load/$(basename "$f")" || { echo "$f differs"; exit 1; }
    done
    rm -r "$dir/load"/*
    # Saved for 3 now: loaded without rebuilding, the same outputs.
    "$mpiexec" -n 3 "$lbknn" run --quiet "$job" "${idx[@]}" "${run[@]}" "${out_load[@]}" ||
        { echo "run from the rebuilt index failed"; exit 1; }
    for f in "$dir"/plain/*; do
        cmp "$f" "$dir/load/$(basename "$f")" || { echo "$f differs after reload"; exit 1; }
    done
    # On 2 ranks the index saved by 3 still fits: index.rebuild loads it
    # (regrouped and built again) and leaves it saved for 3, for the jobs
    # that load it there.
    rm -r "$dir/load"/*
    "$mpiexec" -n 2 "$lbknn" run --quiet "$job" "${idx[@]}" "${run[@]}" --set index.rebuild=true \
        "${out_load[@]}" || { echo "run with index.rebuild on 2 ranks failed"; exit 1; }
    grep -q '^ranks = 3$' "$dir/idx/manifest.txt" ||
        { echo "index.rebuild on 2 ranks saved over the 3-rank index"; exit 1; }
    for f in "$dir"/plain/*; do
        cmp "$f" "$dir/load/$(basename "$f")" || { echo "$f differs on 2 ranks"; exit 1; }
    done
    echo "rebuilt for 3 ranks and the split widest, saved, reloaded on 3 and 2 (not saved" \
        "over): outputs identical"
    exit 0
fi
echo "unknown mode $mode"
exit 2
