#!/usr/bin/env bash
# End-to-end scenarios for lbknn, one per CTest test.
# usage: e2e.sh LBKNN VERIFY WORKDIR SCENARIO GATE
#   GATE: tests/harness's lbk_opencl_gate, which asks the ICD loader (not
#   lbknn) what devices exist
set -u
LBKNN=$1 VERIFY=$2 WORK=$3 SCENARIO=$4 GATE=$5
source "$(cd "$(dirname "$0")" && pwd)/../expect.sh"
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
# Scenarios that start lbknn's cache empty move XDG_CACHE_HOME; PoCL's
# kernel cache, which lives under it by default, stays where it was.
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/pocl/kcache}

case $SCENARIO in
default-job)
    # The built-in default job, made smaller only in size: same code path.
    expect_exit 0 "$LBKNN" run --set synthetic.points=20000 --set synthetic.queries=2000
    expect_out "accuracy"
    expect_out "engine"
    expect_out "queries/s"
    ;;
every-output)
    # Every engine x metric x vote rule against the oracle: neighbours,
    # distances, predictions, probabilities, and the report's accuracy,
    # top-5 accuracy and confusion matrix recomputed from the data; the k-d
    # tree has no cosine or ip, and ip no distance weights (both job errors).
    # The data hold what the rules single out: a zero query and a zero
    # reference row (cosine: a zero row stays zero, its distance to
    # everything 1), and queries that are reference points (queries 3 and 4
    # one that the reference holds twice, rows 30 and 31: two neighbours at
    # distance 0; distance weights: only those vote).
    expect_exit 0 "$LBKNN" generate data --points 1500 --queries 120 --dim 3 --classes 8 --seed 7
    record=16   # fvecs: a 4-byte dimension, then 3 floats
    dd if=/dev/zero of=data/query.fvecs bs=4 seek=1 count=3 conv=notrunc status=none
    dd if=/dev/zero of=data/reference.fvecs bs=4 seek=$((10 * record / 4 + 1)) count=3 \
        conv=notrunc status=none
    for pair in 20:1 21:2 30:3 30:4; do
        dd if=data/reference.fvecs of=data/query.fvecs bs=$record skip=${pair%:*} \
            seek=${pair#*:} count=1 conv=notrunc status=none
    done
    dd if=data/reference.fvecs of=data/reference.fvecs bs=$record skip=30 seek=31 count=1 \
        conv=notrunc status=none
    [ "$(od -An -tf4 -j4 -N12 data/query.fvecs | tr -s ' ')" = " 0 0 0" ] || fail "no zero query"
    cmp -s -n $record -i $((30 * record)):$((4 * record)) data/reference.fvecs data/query.fvecs \
        || fail "query 4 is not reference row 30"
    for engine in brute kdtree; do
        for metric in l2 l1 linf cosine ip; do
            [ $engine = kdtree ] && { [ $metric = cosine ] || [ $metric = ip ]; } && continue
            for weights in uniform distance softmax; do
                [ $metric = ip ] && [ $weights = distance ] && continue
                rm -rf out && mkdir out
                expect_exit 0 "$LBKNN" run data/job.yaml --quiet --set knn.k=7 \
                    --set knn.metric=$metric --set knn.weights=$weights --set knn.engine=$engine \
                    --set knn.temperature=0.5 \
                    --set output.predictions=out/p.csv --set output.neighbors=out/n.ivecs \
                    --set output.distances=out/d.fvecs --set output.report=out/r.yaml \
                    --set output.probabilities=out/pr.csv
                "$VERIFY" outputs data 7 $metric $weights out/p.csv out/n.ivecs out/d.fvecs 0.5 \
                    probabilities=out/pr.csv report=out/r.yaml \
                    || fail "outputs differ from the oracle ($engine $metric $weights)"
            done
        done
    done
    ;;
kdtree-k-limit)
    # The k-d tree's largest K, 1024 (docs/user-guide.md), end to end against the
    # oracle, N not much above it; K = 1025 on the tree is a job error
    # (exit 2), one line that names the limit, before any output exists.
    expect_exit 0 "$LBKNN" generate data --points 1300 --queries 12 --dim 3 --classes 5 --seed 21
    mkdir out
    expect_exit 0 "$LBKNN" run data/job.yaml --set knn.engine=kdtree --set knn.k=1024 \
        --set knn.weights=distance --set output.predictions=out/p.csv \
        --set output.probabilities=out/pr.csv --set output.neighbors=out/n.ivecs \
        --set output.distances=out/d.fvecs --set output.report=out/r.yaml
    grep -q '^engine: {name: kdtree, ' out/r.yaml || fail "K = 1024 did not run on the tree"
    "$VERIFY" outputs data 1024 l2 distance out/p.csv out/n.ivecs out/d.fvecs \
        probabilities=out/pr.csv report=out/r.yaml || fail "K = 1024 outputs differ from the oracle"
    rm -rf out && mkdir out
    expect_exit 2 "$LBKNN" run data/job.yaml --set knn.engine=kdtree --set knn.k=1025 \
        --set output.predictions=out/p.csv
    expect_err "knn.k = 1025: the k-d tree supports K up to 1024; use knn.engine brute"
    one_line
    no_outputs
    ;;
votes-sklearn)
    # Probabilities, predictions and top-5 against scikit-learn's
    # predict_proba (check_votes.py), for every vote rule.
    PY=/usr/bin/python3
    "$PY" -c 'import sklearn' 2>/dev/null || { echo "SKIP: python3-sklearn not installed"; exit 77; }
    expect_exit 0 "$LBKNN" generate data --points 2000 --queries 150 --dim 4 --classes 6 --seed 3
    # Every run first, then one check_votes.py for all of them (one import
    # of scikit-learn, not eight).
    checks=()
    for metric in l2 cosine ip; do
        for weights in uniform distance softmax; do
            [ $metric = ip ] && [ $weights = distance ] && continue
            o=out-$metric-$weights
            rm -rf "$o" && mkdir "$o"
            expect_exit 0 "$LBKNN" run data/job.yaml --quiet --set knn.k=9 --set knn.metric=$metric \
                --set knn.weights=$weights --set knn.temperature=0.1 \
                --set output.predictions=$o/p.csv --set output.probabilities=$o/pr.csv \
                --set output.neighbors=$o/n.ivecs --set output.distances=$o/d.fvecs \
                --set output.report=$o/r.yaml
            checks+=(data 9 $metric $weights 0.1 $o/p.csv $o/pr.csv $o/n.ivecs $o/d.fvecs $o/r.yaml)
        done
    done
    "$PY" "$(dirname "$0")/check_votes.py" "${checks[@]}" || fail "votes differ (the runs above)"
    ;;
array-formats)
    # Neighbours and distances as .ibin/.fbin and .npy hold what .ivecs and
    # .fvecs hold; the probabilities file agrees with the predictions. Also
    # with every rank writing its slice (reduce_scatter is 1 rank here: the
    # mpi tests cover slices).
    expect_exit 0 "$LBKNN" generate data --points 900 --queries 77 --dim 24 --classes 5 --seed 9
    mkdir out
    expect_exit 0 "$LBKNN" run data/job.yaml --quiet --set knn.k=11 --set knn.metric=cosine \
        --set output.neighbors=out/n.ivecs --set output.distances=out/d.fvecs \
        --set output.predictions=out/p.csv --set output.probabilities=out/pr.csv
    expect_exit 0 "$LBKNN" run data/job.yaml --quiet --set knn.k=11 --set knn.metric=cosine \
        --set output.neighbors=out/n.ibin --set output.distances=out/d.fbin
    expect_exit 0 "$LBKNN" run data/job.yaml --quiet --set knn.k=11 --set knn.metric=cosine \
        --set device.batch=10 --set output.neighbors=out/n.npy --set output.distances=out/d.npy
    for ext in ibin npy; do
        "$VERIFY" same-arrays out/n.ivecs out/n.$ext || fail "neighbours .$ext"
    done
    "$VERIFY" same-arrays out/d.fvecs out/d.fbin || fail "distances .fbin"
    "$VERIFY" same-arrays out/d.fvecs out/d.npy || fail "distances .npy"
    "$VERIFY" probabilities out/pr.csv out/p.csv 77 || fail "probabilities"
    ;;
npy-inputs)
    # NumPy and big-ann inputs give the same results as TEXMEX ones: the same
    # generated points in each format.
    for fmt in fvecs npy fbin; do
        expect_exit 0 "$LBKNN" generate g-$fmt --points 600 --queries 40 --dim 6 --format $fmt
        expect_exit 0 "$LBKNN" run g-$fmt/job.yaml --quiet --set knn.metric=ip \
            --set output.predictions=p-$fmt.csv --set output.neighbors=n-$fmt.ivecs
    done
    for fmt in npy fbin; do
        cmp p-fvecs.csv p-$fmt.csv || fail "$fmt predictions differ from fvecs"
        cmp n-fvecs.ivecs n-$fmt.ivecs || fail "$fmt neighbours differ from fvecs"
    done
    ;;
embedding-example)
    # configs/embedding-example.yaml runs as shipped (synthetic data, cosine,
    # softmax, K = 20): top-1 and top-5 in the summary, every output written.
    CONFIGS=$(cd "$(dirname "$0")/../../configs" && pwd)
    expect_exit 0 "$LBKNN" run "$CONFIGS/embedding-example.yaml" --set synthetic.points=4000 \
        --set synthetic.queries=300
    expect_out "metric=cosine  weights=softmax  temperature=0.07"
    expect_out "engine     brute  (cosine and ip have no k-d tree bound: brute force)"
    expect_out "top-5      "
    for f in embedding-predictions.csv embedding-probabilities.csv embedding-neighbors.npy \
             embedding-distances.npy; do
        [ -s $f ] || fail "$f not written"
    done
    "$VERIFY" probabilities embedding-probabilities.csv embedding-predictions.csv 300 \
        || fail "probabilities"
    ;;
similarity-rules)
    # The k-d tree takes neither cosine nor ip, nor K above 1024; auto picks
    # brute force for them; K = 4096 runs (the sort-merge selection).
    expect_exit 2 "$LBKNN" run --set knn.metric=ip --set knn.engine=kdtree
    expect_err "knn.engine kdtree supports the metrics l2, l1 and linf, not ip; use brute (or auto)"
    expect_exit 2 "$LBKNN" run --set knn.k=2000 --set knn.engine=kdtree
    expect_err "the k-d tree supports K up to 1024"
    expect_exit 2 "$LBKNN" run --set knn.metric=ip --set knn.weights=distance
    expect_err "knn.weights distance needs a distance"
    expect_exit 0 "$LBKNN" generate data --points 5000 --queries 20 --dim 3 --classes 4 --seed 5
    mkdir out
    expect_exit 0 "$LBKNN" run data/job.yaml --set knn.k=4096 --set output.predictions=out/p.csv \
        --set output.neighbors=out/n.ivecs --set output.distances=out/d.fvecs
    expect_out "engine     brute  (K above the k-d tree's maximum: brute force)"
    "$VERIFY" outputs data 4096 l2 uniform out/p.csv out/n.ivecs out/d.fvecs \
        || fail "K = 4096 outputs differ from the oracle"
    ;;
failed-run-leaves-nothing)
    mkdir out
    expect_exit 0 "$LBKNN" generate data --points 500 --queries 50 --dim 3
    # The neighbours file cannot be created: a job error, found before any
    # computing, and no predictions file either. (A commit that fails half
    # way is tests/reliability's commit-fails-keeps-previous.)
    expect_exit 2 "$LBKNN" run data/job.yaml --quiet --set output.predictions=out/p.csv \
        --set output.neighbors=out/missing-dir/n.ivecs
    expect_err "missing-dir/n.ivecs"
    no_outputs
    # The report is the last file made: when it cannot be, no result appears.
    expect_exit 2 "$LBKNN" run data/job.yaml --quiet --set output.predictions=out/p.csv \
        --set output.neighbors=out/n.ivecs --set output.report=out/missing-dir/r.yaml
    expect_err "missing-dir/r.yaml"
    no_outputs
    ;;
bad-input-leaves-nothing)
    mkdir out
    printf '1,2,0\n3,4,1\n5,6,0\n' > ref.csv
    printf '1,2,0\n3,nan,1\n' > query.csv
    printf 'reference: {path: ref.csv, label_column: 2}\nquery: {path: query.csv, label_column: 2}\nknn: {k: 1}\noutput: {predictions: out/p.csv}\n' > job.yaml
    expect_exit 2 "$LBKNN" run job.yaml
    expect_err "query.csv:2"
    no_outputs
    ;;
task-search)
    # The lists alone: the same neighbours as classify's, no votes taken,
    # and an output that needs votes refused before any work.
    small=(--set synthetic.points=3000 --set synthetic.queries=200 --set synthetic.dim=4)
    expect_exit 0 "$LBKNN" run --quiet "${small[@]}" --set output.neighbors=classify.ivecs
    expect_exit 0 "$LBKNN" run --quiet "${small[@]}" --set task=search \
        --set output.neighbors=search.ivecs --set output.report=search.yaml
    cmp classify.ivecs search.ivecs || fail "task search found other neighbours than classify"
    grep -qF "accuracy: null  # the task takes no votes" search.yaml || fail "search voted"
    expect_exit 2 "$LBKNN" run "${small[@]}" --set task=search --set output.predictions=p.csv
    expect_err "output.predictions is not made by task search"
    one_line
    ;;
k-larger-than-data)
    expect_exit 2 "$LBKNN" run --set synthetic.points=3 --set synthetic.classes=2 --set knn.k=5
    expect_err "knn.k = 5 is larger than the 3 reference points"
    ;;
dimension-mismatch)
    expect_exit 0 "$LBKNN" generate a --points 50 --queries 5 --dim 3
    expect_exit 0 "$LBKNN" generate b --points 50 --queries 5 --dim 4
    printf 'reference: {path: a/reference.fvecs, labels: a/reference-labels.ivecs}\nquery: {path: b/query.fvecs}\n' > job.yaml
    expect_exit 2 "$LBKNN" run job.yaml
    expect_err "b/query.fvecs: queries have dimension 4 but the reference points"
    expect_exit 2 "$LBKNN" check job.yaml
    ;;
cli)
    expect_exit 0 "$LBKNN" --help
    expect_out "Usage: lbknn"
    expect_exit 0 "$LBKNN" --version
    expect_out "lbknn "
    expect_exit 0 "$LBKNN" run --help
    expect_exit 2 "$LBKNN"
    expect_exit 2 "$LBKNN" frobnicate
    expect_err "unknown command 'frobnicate'"
    expect_exit 2 "$LBKNN" run --bogus
    expect_err "unknown option '--bogus'"
    expect_exit 2 "$LBKNN" run --set knn.k=0
    expect_err "--set knn.k=0"
    expect_exit 2 "$LBKNN" run no-such-job.yaml
    expect_err "no-such-job.yaml"
    expect_exit 0 "$LBKNN" devices
    expect_out "OpenCL devices"
    expect_exit 0 "$LBKNN" check --set synthetic.points=100 --set synthetic.queries=10
    expect_out "OK"
    expect_exit 2 "$LBKNN" generate
    ;;
generate-formats)
    for fmt in fvecs bvecs csv idx npy fbin; do
        expect_exit 0 "$LBKNN" generate g-$fmt --points 300 --queries 30 --dim 5 --format $fmt
        expect_exit 0 "$LBKNN" check g-$fmt/job.yaml
        expect_exit 0 "$LBKNN" run g-$fmt/job.yaml --quiet --set output.predictions=p-$fmt.csv
        [ "$(wc -l < p-$fmt.csv)" -eq 31 ] || fail "$fmt: expected 30 predictions"
    done
    # The same points in every float-exact format give the same predictions.
    cmp p-fvecs.csv p-csv.csv || fail "csv and fvecs runs differ"
    cmp p-fvecs.csv p-idx.csv || fail "idx and fvecs runs differ"
    cmp p-fvecs.csv p-npy.csv || fail "npy and fvecs runs differ"
    cmp p-fvecs.csv p-fbin.csv || fail "fbin and fvecs runs differ"
    ;;
progress-and-quiet)
    expect_exit 0 "$LBKNN" run --progress --set synthetic.points=3000 --set synthetic.queries=900 \
        --set device.batch=100
    expect_err "batch 9/9  900/900 queries"
    expect_exit 0 "$LBKNN" run --quiet --set synthetic.points=3000 --set synthetic.queries=300
    [ ! -s out.txt ] && [ ! -s err.txt ] || fail "--quiet printed something"
    ;;
no-device)
    mkdir out
    # No OpenCL platform at all: one line that says how to get one.
    expect_exit 1 env OCL_ICD_VENDORS=/nonexistent "$LBKNN" run --set synthetic.points=100 \
        --set output.predictions=out/p.csv
    expect_err "no usable OpenCL device found; on Debian install"
    [ "$(wc -l < err.txt)" -eq 1 ] || fail "expected exactly one error line"
    no_outputs
    # A device type this machine lacks (no GPU here; skip where there is
    # one), asked of the ICD loader, not of lbknn.
    if ! "$GATE" --has gpu >/dev/null; then
        expect_exit 1 "$LBKNN" run --set device.type=gpu --set synthetic.points=100
        expect_err "no OpenCL device of type 'gpu'"
    fi
    ;;
install)
    # The installed binary runs from anywhere: kernels are inside it.
    cmake --install "$(dirname "$LBKNN")" --prefix "$WORK/prefix" >/dev/null || fail "install"
    [ -f prefix/share/lbknn/configs/fashion-mnist.yaml ] || fail "configs not installed"
    [ -f prefix/share/lbknn/jobs/README.md ] || fail "job scripts not installed"
    cd /
    expect_exit 0 "$WORK/prefix/bin/lbknn" run --set synthetic.points=2000 --set synthetic.queries=100
    cd "$WORK"
    ;;
fashion-mnist)
    # scikit-learn's KNeighborsClassifier(5) scores 0.8554 on Fashion-MNIST.
    D=/usr/share/datasets/fashion-mnist
    [ -f $D/train-images-idx3-ubyte.gz ] || { echo "SKIP: dataset-fashion-mnist not installed"; exit 77; }
    CONFIGS=$(cd "$(dirname "$0")/../../configs" && pwd)
    expect_exit 0 "$LBKNN" run "$CONFIGS/fashion-mnist.yaml"
    expect_out "accuracy   0.8554  (8554 / 10000)"
    [ "$(wc -l < fashion-mnist-predictions.csv)" -eq 10001 ] || fail "predictions rows"
    ;;
device-threads)
    # device.threads (the library's n_jobs) limits a CPU device to that many
    # compute units, an OpenCL sub-device, and never changes a result: both
    # engines, outputs byte-identical to the whole device's and the
    # oracle's; the summary says how many threads ran and why.
    expect_exit 0 "$LBKNN" generate d --points 3000 --queries 200 --dim 5 --classes 4 --seed 13
    for engine in kdtree brute; do
        for threads in 0 1 -2; do
            rm -rf out && mkdir out
            expect_exit 0 "$LBKNN" run d/job.yaml --set knn.engine=$engine \
                --set device.threads=$threads --set output.predictions=out/p.csv \
                --set output.neighbors=out/n.ivecs --set output.distances=out/d.fvecs
            if [ "$threads" = 0 ]; then
                "$VERIFY" outputs d 5 l2 uniform out/p.csv out/n.ivecs out/d.fvecs 0.07 \
                    || fail "outputs differ from the oracle ($engine)"
                units=$(sed -n 's/.*cpu_threads=\([0-9]*\) .*/\1/p' out.txt)
                rm -rf base && cp -r out base
                continue
            fi
            for f in p.csv n.ivecs d.fvecs; do
                cmp -s out/$f base/$f || fail "$f differs: $engine device.threads=$threads"
            done
            # A CPU device with more than one compute unit (none on a GPU).
            if [ -n "$units" ] && [ "$units" -gt 1 ]; then
                want=1
                [ "$threads" = -2 ] && want=$((units - 1))
                expect_out "cpu_threads=$want (device.threads)"
            fi
        done
    done
    ;;
tuning-settings | tuning-settings.full)
    # Kernel parameters never change a result: brute force (24-d, the
    # blocked kernel and its prefilter) and the k-d tree (3-d, every build
    # sort), derived and forced settings; outputs byte-identical and equal to
    # the oracle; the report names the parameters and where they came from.
    # The first run of each data and metric (derived settings, sort auto) is
    # checked against the oracle, the others against it byte for byte.
    export XDG_CACHE_HOME=$WORK/cache
    expect_exit 0 "$LBKNN" generate b --points 2500 --queries 150 --dim 24 --classes 5 --seed 11
    expect_exit 0 "$LBKNN" generate t --points 3000 --queries 150 --dim 3 --classes 5 --seed 12
    settings=("" "lanes=4 block_queries=1 block_vectors=1 tile_blocks=1 slice=8 segment_log2=4"
              "lanes=8 block_queries=6 block_vectors=2 tile_blocks=3 slice=13 segment_log2=5"
              "lanes=16 block_queries=16 block_vectors=1 tile_blocks=32 slice=4096 segment_log2=24"
              "lanes=16 block_queries=3 block_vectors=5 tile_blocks=2 slice=24 segment_log2=12")
    tuned() { # DATA METRIC SORT SETTING
        local data=$1 metric=$2 sort=$3 i=$4 sets=() kv want=job f
        for kv in ${settings[$i]}; do sets+=(--set "tuning.$kv"); done
        rm -rf out && mkdir out
        expect_exit 0 "$LBKNN" run $data/job.yaml --quiet --set knn.k=7 \
            --set knn.metric=$metric --set tree.sort=$sort "${sets[@]}" \
            --set output.predictions=out/p.csv --set output.neighbors=out/n.ivecs \
            --set output.distances=out/d.fvecs --set output.report=out/r.yaml
        [ -z "${settings[$i]}" ] && want=derived
        grep -q "^  - {rank: 0, source: $want, lanes: " out/r.yaml \
            || fail "report: tuning source is not $want ($data $metric ${settings[$i]})"
        if [ -z "${settings[$i]}" ] && [ $sort = auto ]; then
            "$VERIFY" outputs $data 7 $metric uniform out/p.csv out/n.ivecs \
                out/d.fvecs 0.07 || fail "outputs differ from the oracle ($data $metric)"
            rm -rf base-$data-$metric && cp -r out base-$data-$metric
            return
        fi
        for f in p.csv n.ivecs d.fvecs; do
            cmp -s out/$f base-$data-$metric/$f \
                || fail "$f differs: $data $metric $sort ${settings[$i]:-derived}"
        done
    }
    if [ $SCENARIO = tuning-settings.full ]; then
        # The full product: each data's metrics x its sorts x every setting.
        for data in b t; do
            for metric in l2 l1 cosine; do
                [ $data = t ] && [ $metric = cosine ] && continue
                sorts=(auto)
                [ $data = t ] && sorts=(auto select radix bitonic)
                for sort in "${sorts[@]}"; do
                    for i in "${!settings[@]}"; do tuned $data $metric $sort $i; done
                done
            done
        done
    else
        # A covering subset of the product (the full one is tuning-settings.full,
        # label slow), each pair of values that matters still meeting:
        # - brute force: metric and every setting value are compile-time (one
        #   kernel build each, most of a cold run's time). Every metric meets
        #   the derived settings and each forced lane count 4, 8 and 16 (the
        #   vector type its distance steps, norms and exact keys are built for);
        #   each forced setting meets at least one metric. Left out: l2 with
        #   setting 4, l1 with setting 3, cosine with setting 3.
        for run in l2:0 l2:1 l2:2 l2:3 l1:0 l1:1 l1:2 l1:4 cosine:0 cosine:1 cosine:2 cosine:4; do
            tuned b ${run%:*} auto ${run#*:}
        done
        # - the k-d tree: no setting is compile-time there (segment_log2 sizes
        #   the per-subtree sorts at run time). Every sort meets every setting
        #   once, the metric alternating, so that each metric meets every sort
        #   and every setting too; the (auto, derived) pair runs with both
        #   metrics, each one's oracle-checked base.
        tuned t l2 auto 0
        tuned t l1 auto 0
        sorts=(auto select radix bitonic)
        for s in 0 1 2 3; do
            for i in "${!settings[@]}"; do
                [ $s = 0 ] && [ $i = 0 ] && continue
                metrics=(l2 l1)
                tuned t ${metrics[$(((s + i) % 2))]} ${sorts[$s]} $i
            done
        done
    fi
    ;;
tuning-cache)
    # The tuning cache: absent, corrupt, written for another device, out of
    # range (each ignored, with one warning for a bad file, and the derived
    # parameters used), and good (its parameters used, source "tuned"); the
    # results never change. The report names the file looked for.
    export XDG_CACHE_HOME=$WORK/cache
    expect_exit 0 "$LBKNN" generate data --points 2500 --queries 150 --dim 24 --classes 5 --seed 13
    run() {
        rm -rf out && mkdir out
        expect_exit 0 "$LBKNN" run data/job.yaml --set knn.k=5 --set output.neighbors=out/n.ivecs \
            --set output.distances=out/d.fvecs --set output.report=out/r.yaml
    }
    run
    grep -q '^  - {rank: 0, source: derived, ' out/r.yaml || fail "no cache: not derived"
    dir=$(sed -n 's/^tuning_cache_dir: "\(.*\)"$/\1/p' out/r.yaml)
    file=$(sed -n 's/.*cache_file: "\(tune-[0-9a-f]*\.yaml\)".*/\1/p' out/r.yaml)
    [ "$dir" = "$WORK/cache/lbknn" ] || fail "tuning_cache_dir '$dir'"
    [ -n "$file" ] || fail "no cache_file in the report"
    [ -e "$dir/$file" ] && fail "a cache file appeared without lbknn tune"
    rm -rf base && cp -r out base
    same() { cmp -s out/n.ivecs base/n.ivecs && cmp -s out/d.fvecs base/d.fvecs || fail "$1: results differ"; }
    mkdir -p "$dir"
    printf 'lanes: [8\n\001\002\n' > "$dir/$file"
    run
    expect_err "ignoring the tuning cache"
    grep -q '^  - {rank: 0, source: derived, ' out/r.yaml || fail "corrupt cache: not derived"
    same "corrupt cache"
    version=$("$LBKNN" --version | head -n 1 | awk '{print $2}')
    printf 'lbknn_version: "%s"\ndevice: "a device that is not this one"\ndevice_version: "x"\ndriver: "y"\nlanes: 8\nblock_queries: 6\nblock_vectors: 2\ntile_blocks: 4\nslice: 64\nsegment_log2: 12\n' "$version" > "$dir/$file"
    run
    expect_err "written for another device"
    grep -q '^  - {rank: 0, source: derived, ' out/r.yaml || fail "foreign cache: not derived"
    same "foreign cache"
    # tuning.cache false does not even read the file. (A good file is
    # written by lbknn tune: scenario tune-command, and tests/tuning.)
    printf 'garbage\n' > "$dir/$file"
    rm -rf out && mkdir out
    expect_exit 0 "$LBKNN" run data/job.yaml --set knn.k=5 --set tuning.cache=false \
        --set output.neighbors=out/n.ivecs --set output.distances=out/d.fvecs \
        --set output.report=out/r.yaml
    grep -q "ignoring the tuning cache" err.txt && fail "tuning.cache false still read the file"
    grep -q 'cache_file: ""' out/r.yaml || fail "tuning.cache false: a cache file is named"
    same "tuning.cache false"
    ;;
tune-command)
    # lbknn tune measures the parameters (tens of seconds) and writes the
    # cache; a run then takes them ("tuned") and gets the same results.
    export XDG_CACHE_HOME=$WORK/cache
    expect_exit 0 "$LBKNN" generate data --points 3000 --queries 100 --dim 24 --classes 5 --seed 14
    rm -rf base && mkdir base
    expect_exit 0 "$LBKNN" run data/job.yaml --quiet --set tuning.cache=false \
        --set output.neighbors=base/n.ivecs --set output.distances=base/d.fvecs
    expect_exit 0 "$LBKNN" tune
    expect_out "tuned "
    expect_out "written  $WORK/cache/lbknn/tune-"
    rm -rf out && mkdir out
    expect_exit 0 "$LBKNN" run data/job.yaml --set output.neighbors=out/n.ivecs \
        --set output.distances=out/d.fvecs --set output.report=out/r.yaml
    grep -q '^  - {rank: 0, source: tuned, ' out/r.yaml || fail "the run did not take the tuned cache"
    expect_out "(tuned)"
    cmp -s out/n.ivecs base/n.ivecs && cmp -s out/d.fvecs base/d.fvecs || fail "results differ"
    expect_exit 2 "$LBKNN" tune --type fpga
    expect_err "--type fpga"
    ;;
memory-accounting)
    # The report's per-rank memory is lbknn's own (issue 42, item 5). A
    # Python parent touches 300 MiB, then exec's lbknn in its place: Linux's
    # getrusage ru_maxrss keeps that peak across exec, VmHWM starts afresh,
    # and a 1000-point run stays far below it (about 100 MiB with PoCL).
    PY=/usr/bin/python3
    [ -x "$PY" ] || { echo "SKIP: no $PY"; exit 77; }
    [ -r /proc/self/status ] || { echo "SKIP: no /proc: the report falls back to ru_maxrss"; exit 77; }
    expect_exit 0 "$LBKNN" generate data --points 1000 --queries 100 --dim 3 --classes 4 --seed 5
    mkdir out
    "$PY" -c '
import os, sys
held = b"\x01" * (300 << 20)  # written, so resident
status = open("/proc/self/status").read().split("\n")
kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
open("out/parent_hwm", "w").write(str(kib * 1024))
os.execv(sys.argv[1], sys.argv[1:])
' "$LBKNN" run data/job.yaml --quiet --set knn.engine=brute --set device.memory_mb=16 \
        --set output.report=out/r.yaml >out.txt 2>err.txt || { cat err.txt >&2; fail "run failed"; }
    parent=$(cat out/parent_hwm)
    [ "$parent" -gt $((300 << 20)) ] || fail "the parent's peak is only $parent bytes"
    grep -qx 'peak_rss_source: VmHWM' out/r.yaml || fail "the report's RSS is not VmHWM"
    rss=$(sed -n 's/^  - {rank: 0, .*peak_rss_bytes: \([0-9]*\), .*/\1/p' out/r.yaml)
    [ -n "$rss" ] && [ "$rss" -gt 0 ] && [ "$rss" -lt $((200 << 20)) ] ||
        fail "peak_rss_bytes ${rss:-missing} is not lbknn's own (the parent's: $parent)"
    # The brute engine's device bytes: at least the shard's 1000 x 3 floats,
    # at most the budget its plan was given (device.memory_mb).
    dev=$(sed -n 's/^  - {rank: 0, .*peak_device_bytes: \([0-9]*\),.*}$/\1/p' out/r.yaml)
    [ -n "$dev" ] && [ "$dev" -ge 12000 ] && [ "$dev" -le $((16 << 20)) ] ||
        fail "brute force's peak_device_bytes ${dev:-missing} is not in [12000, 16 MiB]"
    # The k-d tree too: at least its points, and at most the budget.
    expect_exit 0 "$LBKNN" run data/job.yaml --quiet --set knn.engine=kdtree \
        --set device.memory_mb=16 --set output.report=out/t.yaml
    dev=$(sed -n 's/^  - {rank: 0, .*peak_device_bytes: \([0-9]*\),.*}$/\1/p' out/t.yaml)
    [ -n "$dev" ] && [ "$dev" -ge 12000 ] && [ "$dev" -le $((16 << 20)) ] ||
        fail "the k-d tree's peak_device_bytes ${dev:-missing} is not in [12000, 16 MiB]"
    ;;
*)
    fail "unknown scenario $SCENARIO"
    ;;
esac
echo "PASS: $SCENARIO"
