#!/usr/bin/env bash
# Bad inputs end to end, beyond tests/dataset, tests/job and tests/e2e:
# each must give exit 2 (or 1 for a run-time failure), one error line that
# names the file and where, and leave no output file.
# usage: bad_inputs.sh LBKNN FAIL_WRITE_SO WORKDIR SCENARIO
set -u
LBKNN=$1 FAIL_WRITE=$2 WORK=$3 SCENARIO=$4
source "$(cd "$(dirname "$0")" && pwd)/../expect.sh"
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1

# A CSV job over ref.csv / query.csv with the label in column 3.
csv_job() {
    printf '1,2,0\n3,4,1\n' > query.csv
    printf 'reference: {path: %s, label_column: 2}\nquery: {path: query.csv, label_column: 2}\nknn: {k: 1}\n' \
        "$1" > job.yaml
}

case $SCENARIO in
csv-bom-keeps-first-row)
    # A spreadsheet's byte-order mark must not make the first row a "header".
    printf '\xef\xbb\xbf1,2,0\n3,4,1\n5,6,0\n' > ref.csv
    csv_job ref.csv
    expect_exit 0 "$LBKNN" check job.yaml
    expect_out "reference  3 x 2, labelled"
    ;;
text-labels-bom)
    printf '1,2\n3,4\n5,6\n' > ref.csv
    printf '\xef\xbb\xbf0\n1\n0\n' > ref.txt
    printf '1,2,0\n' > query.csv
    printf 'reference: {path: ref.csv, labels: ref.txt}\nquery: {path: query.csv, label_column: 2}\nknn: {k: 1}\n' > job.yaml
    expect_exit 0 "$LBKNN" check job.yaml
    ;;
csv-cr-line-ends)
    printf '1,2,0\r3,4,1\r5,6,0\r' > ref.csv
    csv_job ref.csv
    expect_exit 2 "$LBKNN" check job.yaml
    expect_err "ref.csv:1: carriage return inside a line"
    one_line
    ;;
tsv-without-delimiter)
    printf '1\t2\t0\n3\t4\t1\n' > ref.tsv
    csv_job ref.tsv
    expect_exit 2 "$LBKNN" check job.yaml
    expect_err "ref.tsv:1: no ',' delimiter on the line, but it holds tabs"
    one_line
    ;;
control-byte-in-field)
    printf '1,2,0\n3,4\033[2Jx,1\n' > ref.csv
    csv_job ref.csv
    expect_exit 2 "$LBKNN" check job.yaml
    expect_err "ref.csv:2:2: not a number: '4\\x1b[2Jx'"
    one_line
    ;;
job-file-is-directory)
    mkdir jobdir
    expect_exit 2 "$LBKNN" check jobdir
    expect_err "jobdir: cannot open job file: Is a directory"
    one_line
    ;;
same-output-twice)
    mkdir out
    expect_exit 2 "$LBKNN" run --set synthetic.points=200 --set synthetic.queries=20 \
        --set output.predictions=out/x --set output.neighbors=out/x
    expect_err "output.predictions and output.neighbors name the same file 'out/x'"
    one_line
    no_outputs
    printf 'output:\n  report: out/r\n  distances: out/r\n' > job.yaml
    expect_exit 2 "$LBKNN" check job.yaml
    expect_err "job.yaml:2:11: output.distances and output.report name the same file"
    ;;
output-is-directory)
    mkdir -p out/nn.ivecs
    expect_exit 2 "$LBKNN" run --set synthetic.points=200 --set synthetic.queries=20 \
        --set output.predictions=out/p.csv --set output.neighbors=out/nn.ivecs
    expect_err "out/nn.ivecs: output.neighbors is a directory"
    one_line
    [ "$(ls out)" = "nn.ivecs" ] || fail "output files left behind: $(ls out)"
    ;;
output-overwrites-input)
    expect_exit 0 "$LBKNN" generate data --points 200 --queries 20 --dim 3
    cp data/query.fvecs saved.fvecs
    expect_exit 2 "$LBKNN" run data/job.yaml --set output.distances=data/query.fvecs
    expect_err "data/query.fvecs: output.distances would overwrite the input file"
    one_line
    cmp -s data/query.fvecs saved.fvecs || fail "the input file was changed"
    ;;
write-fails-in-last-batch)
    # The only batch is the last: its failed write must fail the run. Every
    # write into full/ fails (the shim), the way a full disk does.
    mkdir out full
    # Added to what the sanitized run preloads and asks, not in its place.
    expect_exit 1 env LD_PRELOAD="$FAIL_WRITE${LD_PRELOAD:+:$LD_PRELOAD}" LBK_FAIL_PWRITE_DIR=/full \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        "$LBKNN" run --quiet --set synthetic.points=200 --set synthetic.queries=20 \
        --set output.predictions=out/p.csv --set output.neighbors=full/nn.ivecs
    expect_err "nn.ivecs: write failed: No space left on device"
    one_line
    no_outputs
    [ -z "$(ls -A full)" ] || fail "files left behind: $(ls -A full)"
    ;;
idx-gz-header-lies)
    # 16 bytes that claim 2^31 rows of 784 bytes: an input error, found
    # before anything is allocated for them.
    printf '\x00\x00\x08\x03\x80\x00\x00\x00\x00\x00\x00\x1c\x00\x00\x00\x1c' | gzip -c > big-ubyte.gz
    printf 'reference: {path: big-ubyte.gz}\nquery: {path: big-ubyte.gz}\n' > job.yaml
    expect_exit 2 "$LBKNN" check job.yaml
    expect_err "big-ubyte.gz: truncated: the header declares 2147483648 rows (1683627180032 bytes), more than a"
    one_line
    ;;
generate-long-directory)
    expect_exit 2 "$LBKNN" generate "$(printf 'd%.0s' $(seq 1010))"
    expect_err "output directory name too long"
    [ -z "$(ls -A)" ] || [ "$(ls -A | grep -v -e out.txt -e err.txt)" = "" ] || fail "files written"
    ;;
report-escapes-odd-bytes)
    # A job file whose name is not UTF-8: the report must stay valid YAML.
    job=$(printf 'job\xff.yaml')
    printf 'synthetic: {points: 200, queries: 20}\noutput: {report: r.yaml}\n' > "$job"
    expect_exit 0 "$LBKNN" run --quiet "$job"
    # YAML hex escapes are case-insensitive (\xff = \xFF).
    grep -qiF 'job_file: "job\xff.yaml"' r.yaml || { head -3 r.yaml >&2; fail "job_file not escaped"; }
    ;;
summary-escapes-odd-bytes)
    # Paths with a terminal escape sequence and a newline: the summary on
    # stdout shows them escaped, one line each, and writes to the real names.
    job=$(printf 'job\033[2J.yaml')
    pred=$(printf 'p\nx.csv')
    printf 'synthetic: {points: 200, queries: 20}\n' > "$job"
    expect_exit 0 "$LBKNN" run "$job" --set "output.predictions=$pred" --set output.report=
    [ -s "$pred" ] || fail "predictions not written to the odd name"
    if LC_ALL=C grep -q "$(printf '\033')" out.txt; then fail "raw escape byte on stdout"; fi
    grep -qF 'job: job\x1b[2J.yaml' out.txt || { cat out.txt >&2; fail "job path not escaped"; }
    grep -qF 'predictions p\x0ax.csv' out.txt || { cat out.txt >&2; fail "output path not escaped"; }
    ;;
*)
    fail "unknown scenario $SCENARIO"
    ;;
esac
echo "PASS: $SCENARIO"
