#!/usr/bin/env bash
# usage: docs.sh SCENARIO LBKNN MAN COMPLETION WORK SOURCE
#   man         every command and option of `lbknn --help` and every job key
#               of `lbknn keys` is in the page, which man renders with its
#               sections and no warning
#   completion  every command and option of --help is in the completion,
#               and, sourced into bash, it completes what a user types
set -euo pipefail
SCENARIO=$1 LBKNN=$2 MAN=$3 COMPLETION=$4 WORK=$5 SOURCE=$6
source "$SOURCE/tests/expect.sh"
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"

"$LBKNN" --help >help.txt
"$LBKNN" keys >keys.txt
# The commands: "  NAME ..." lines of the Commands block; the options: every
# -x and --xyz anywhere in the help.
commands=$(sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z]*\).*/\1/p' help.txt)
options=$(grep -o -- '\(^\|[][ ,]\)--*[A-Za-z][A-Za-z-]*' help.txt | sed 's/^[][ ,]//' | sort -u)
[ "$(wc -w <<<"$commands")" -ge 6 ] || fail "read only these commands: $commands"
[ "$(wc -w <<<"$options")" -ge 10 ] || fail "read only these options: $options"
keys=$(awk '{print $1}' keys.txt)
[ "$(wc -w <<<"$keys")" -ge 50 ] || fail "read only $(wc -w <<<"$keys") keys"

case $SCENARIO in
man)
    [ -s "$MAN" ] || fail "no $MAN"
    # roff spells '-' as '\-': the page's text with that undone.
    sed 's/\\-/-/g' "$MAN" >page.txt
    for c in $commands; do grep -q "^\.B lbknn $c\$" page.txt || fail "no command $c in the page"; done
    for o in $options; do grep -qF -- "$o" page.txt || fail "no option $o in the page"; done
    for k in $keys; do grep -qx "\.B $k" page.txt || fail "no key $k in the page"; done
    grep -q "^\.TH LBKNN 1 .*lbknn $("$LBKNN" --version | head -n 1 | cut -d' ' -f2)" page.txt ||
        fail "the page's title line lacks the version"
    # man itself: every section, the keys' values, no roff warning.
    MANWIDTH=100 man --warnings -l "$MAN" >rendered.txt 2>warnings.txt || fail "man -l failed"
    [ ! -s warnings.txt ] || { cat warnings.txt >&2; fail "man warns"; }
    for section in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS "EXIT STATUS" ENVIRONMENT \
        "JOB KEYS" LICENSE; do
        grep -q "^$section\$" rendered.txt || fail "no section $section in the rendered page"
    done
    grep -q 'l2|l1|linf|cosine|ip' rendered.txt || fail "knn.metric's values are not rendered"
    grep -q -- '--set KEY=VALUE' rendered.txt || fail "the options are not rendered"
    ;;
completion)
    [ -s "$COMPLETION" ] || fail "no $COMPLETION"
    bash -n "$COMPLETION" || fail "the completion does not parse"
    for c in $commands; do
        grep -q "^_lbknn_commands='.*\b$c\b" "$COMPLETION" || fail "no command $c in the completion"
    done
    for o in $options; do
        grep -q -- "^_lbknn_all_options='.* $o\b\|^_lbknn_all_options='$o\b" "$COMPLETION" ||
            fail "no option $o in the completion's list"
    done
    mkdir -p files && touch files/job.yaml
    # complete LINE: the completion's replies for LINE typed so far, one a
    # line, as bash would get them at <TAB> (COMP_WORDBREAKS as bash's).
    # Bash's own default word breaks: '=' among them.
    breaks=$(printf ' \t\n"%s@><=;|&(:' "'")
    complete_line() {
        bash --norc -c 'source "$1"; COMP_LINE=$2 COMP_POINT=${#2} COMP_WORDBREAKS=$3
            _lbknn; printf "%s\n" "${COMPREPLY[@]}"' _ "$COMPLETION" "$1" "$breaks"
    }
    # expect LINE WANT: the replies, space-separated, are exactly WANT.
    expect() {
        local got
        got=$(complete_line "$1" | tr '\n' ' ' | sed 's/ $//')
        [ "$got" = "$2" ] || fail "completing '$1' gave '$got', not '$2'"
    }
    expect "lbknn ru" "run"
    expect "lbknn " "$(tr '\n' ' ' <<<"$commands")-h --help -V --version"
    expect "lbknn run --pro" "--progress"
    expect "lbknn run --set knn.me" "knn.metric="
    expect "lbknn run --set knn.metric=" "l2 l1 linf cosine ip"
    expect "lbknn run --set knn.metric=l" "l2 l1 linf"
    expect "lbknn check job.yaml --set device.ty" "device.type="
    expect "lbknn run --set device.type=g" "gpu"
    expect "lbknn run --set tree.verify=" "true false"
    expect "lbknn build --set mpi.partition=s" "shard spatial"
    expect "lbknn run --set output.report=files/j" "files/job.yaml"
    expect "lbknn run files/j" "files/job.yaml"
    expect "lbknn generate out --format n" "npy"
    expect "lbknn devices --type " "gpu cpu any"
    expect "lbknn tune --device " ""
    expect "lbknn generate out --points " ""
    # Every enumerated key completes to exactly the values `lbknn keys` lists.
    while read -r key values; do
        [[ $values == *"|"* ]] || continue
        expect "lbknn run --set $key=" "${values//|/ }"
    done <keys.txt
    ;;
*)
    fail "unknown scenario $SCENARIO"
    ;;
esac
echo "PASS docs.$SCENARIO"
