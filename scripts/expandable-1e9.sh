#!/bin/sh
# expandable-1e9.sh [--kind expandable|quotient|pocket|both] [--out DIR] [MAX]
#
# Grows a filter of the kind (default pocket) from 1,000 keys to MAX
# (default 1e9) 8-byte random keys at a 1 % target and prints, at every
# power of ten, the expansions, the rate measured on 10M keys never added
# and the bits per key (expandable-bench --grow-only; a false negative at
# any power of ten ends the run with status 1).  Then it writes into DIR
# (default docs; or EXP_1E9_OUT):
#   NAME.svg  measured fpp per power of ten against the 1 % line,
#             and bits per key (gnuplot, log-x keys 1e3..MAX)
#   NAME.md   the bench's table, the commit, the date, the machine,
#             run time and peak resident memory (/usr/bin/time)
# NAME is pocket-1e9 for --kind pocket, expandable-1e9 for the others (so
# that a run of one does not replace the page of the others).
# --kind both runs the two kinds one after the other, each in its own
# process (the peak memory is each kind's, not their sum), into one figure
# and one page.  The bench's logs and CSV (expandable-bench --csv) and the
# gnuplot script stay in build/expandable-1e9/.  gnuplot-nox and time are
# installed by scripts/ensure-deps.sh when missing; without gnuplot the
# page is written and the figure skipped (said on stderr and in the page).
# EXP_1E9_ABSENT: the keys never added (default 1e7).  A test run:
#   scripts/expandable-1e9.sh --kind both --out /tmp/exp 1e6
#
# Memory and time: docs/pocket-1e9.md has the pocket kind's last run's,
# docs/expandable-1e9.md the quotient kind's (its peak is its last growth's
# two tables); the expandable kind's
# doubling peak is in docs/expandable.md ("Measured").  --kind both runs the
# kinds one after the other: its peak is the larger one's.
set -e

usage() {
    echo "usage: scripts/expandable-1e9.sh [--kind expandable|quotient|pocket|both] [--out DIR] [MAX]"
    echo "  MAX default 1e9; DIR default docs (or EXP_1E9_OUT); kind default pocket"
}

kind=pocket
out=${EXP_1E9_OUT:-}
max=1e9
absent=${EXP_1E9_ABSENT:-1e7}
while [ $# -gt 0 ]; do
    case $1 in
    --kind) [ $# -ge 2 ] || { usage >&2; exit 2; }; kind=$2; shift 2 ;;
    --kind=*) kind=${1#--kind=}; shift ;;
    --out) [ $# -ge 2 ] || { usage >&2; exit 2; }; out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) usage >&2; exit 2 ;;
    *) max=$1; shift ;;
    esac
done
case $kind in
expandable | quotient | pocket) kinds=$kind ;;
both) kinds="expandable quotient" ;;
*) echo "expandable-1e9.sh: --kind is expandable, quotient, pocket or both, not $kind" >&2; exit 2 ;;
esac
case $kind in
pocket) name=pocket-1e9 ;;
*) name=expandable-1e9 ;;
esac
# DIR relative to where the script was started; docs is the repo's.
case $out in
"") out=docs ;;
/*) ;;
*) out=$(pwd)/$out ;;
esac
cd "$(dirname "$0")/.."
# MAX as a whole number (1e9, 100000000 and 1.5e8 all do); at least 1,000.
maxn=$(awk -v m="$max" 'BEGIN { if (m !~ /^[0-9.]+([eE][0-9]+)?$/ || m + 0 < 1000) exit 1;
                                 printf "%.0f", m + 0 }') || {
    echo "expandable-1e9.sh: MAX is a number of keys, at least 1000, not $max" >&2
    exit 2
}

build=${BUILD:-build}
bench=$build/bench/expandable-bench
work=$build/expandable-1e9
mkdir -p "$work" "$out"

# The packages the run needs, installed only when missing (as make deps does).
need=""
command -v gnuplot >/dev/null 2>&1 || need="$need gnuplot-nox"
[ -x /usr/bin/time ] || need="$need time"
# shellcheck disable=SC2086 # one word per package
if [ -n "$need" ] && ! scripts/ensure-deps.sh $need; then
    echo "expandable-1e9.sh: could not install:$need (going on without)" >&2
fi

make --no-print-directory BUILD="$build" "$bench" >/dev/null

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then
    commit="$commit (with uncommitted changes)"
fi
cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)
[ -n "$cpu" ] || cpu=$(uname -m)
ncpu=$(nproc 2>/dev/null || echo "?")
memtotal=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null || true)
started=$(date -u '+%Y-%m-%d %H:%M UTC')

# KiB as MiB or GiB.
human_kib() {
    awk -v k="$1" 'BEGIN { if (k !~ /^[0-9]+$/) print "unknown";
                           else if (k >= 1048576) printf "%.2f GiB", k / 1048576;
                           else printf "%.1f MiB", k / 1024 }'
}

for k in $kinds; do
    log=$work/$k.log
    rm -f "$work/$k.csv" "$work/$k.time" "$work/$k.time1" "$work/$k.rc"
    set -- "$bench" --kind "$k" --max "$max" --absent "$absent" --grow-only --csv "$work/$k.csv"
    echo "== $k: $* (log: $log)"
    if [ -x /usr/bin/time ]; then
        set -- /usr/bin/time -o "$work/$k.time" -f "%e %M" "$@"
    fi
    { rc=0; "$@" 2>&1 || rc=$?; echo "$rc" >"$work/$k.rc"; } | tee "$log"
    rc=$(cat "$work/$k.rc")
    if [ "$rc" != 0 ]; then
        echo "expandable-1e9.sh: the $k run failed (status $rc; log: $log); nothing written to $out" >&2
        exit "$rc"
    fi
    if [ -f "$work/$k.time" ]; then
        # the last line: "Command exited with ..." may come first
        tail -n 1 "$work/$k.time" >"$work/$k.time1"
        read -r secs kib <"$work/$k.time1" || true
        echo "$k: ${secs} s, $(human_kib "$kib") peak resident ($kib KiB)"
    fi
done
ended=$(date -u '+%Y-%m-%d %H:%M UTC')

# One data file per kind: keys, fpp in %, bits per key, expansions ("?" for
# a rate of 0, which the log scale cannot show).
for k in $kinds; do
    awk -F, 'NR > 1 && $1 != "" { fpp = $4 * 100; printf "%s %s %s %s\n", $2, (fpp > 0 ? fpp : "?"), $5, $3 }' \
        "$work/$k.csv" >"$work/$k.dat"
    [ -s "$work/$k.dat" ] || { echo "expandable-1e9.sh: no rows in $work/$k.csv" >&2; exit 1; }
done

# The figure: two panels sharing the keys axis.
maxlabel=$(awk -v m="$maxn" 'BEGIN { s = m; while (length(s) > 3) { t = substr(s, length(s) - 2) (t == "" ? "" : "," t);
                                                                      s = substr(s, 1, length(s) - 3) }
                                     print s (t == "" ? "" : "," t) }')
# The rate's axis: from the decade below the lowest rate to 3 % (or 2x the
# highest), so that the 1 % line is inside the frame.
yrange=$(for k in $kinds; do cat "$work/$k.dat"; done |
    awk '$2 != "?" { if (lo == "" || $2 < lo) lo = $2; if ($2 > hi) hi = $2 }
         END { if (lo == "") lo = 0.01; e = log(lo) / log(10); f = int(e); if (f > e) f--;
               printf "%g:%g", 10 ^ f, (2 * hi > 3 ? 2 * hi : 3) }')
absentlabel=$(awk -v a="$absent" 'BEGIN { a += 0; if (a >= 1e6 && a % 1e6 == 0) printf "%dM", a / 1e6; else printf "%.0f", a }')
gp=$work/expandable-1e9.gp
svg_tmp=$work/$name.svg
figure=""
{
    echo "set terminal svg size 960,900 dynamic background rgb 'white' font 'sans,12'"
    echo "set output '$svg_tmp'"
    echo "set datafile missing '?'"
    printf '%s\n' "set multiplot layout 2,1 title \"amq: filters grown from 1,000 keys to $maxlabel keys (8-byte random keys, 1 % target)\\ncommit $commit, $started\" font 'sans,14'"
    echo "set logscale x"
    echo "set xrange [1000 / 1.5:$maxn * 1.5]"
    echo "set format x '10^{%L}'"
    echo "set grid"
    echo "set key bottom right box opaque"
    echo "set lmargin 12"
    echo "set rmargin 4"
    echo "set title 'Measured false-positive rate at each power of ten ($absentlabel keys never added)'"
    echo "set xlabel 'keys added'"
    echo "set ylabel 'measured fpp (%, log scale)'"
    echo "set logscale y"
    echo "set yrange [$yrange]"
    echo "set format y '%g'"
    printf "plot 1 with lines dt 2 lw 2 lc rgb '#d62728' title 'target: 1 %%'"
    for k in $kinds; do
        case $k in
        expandable) c='#1f77b4'; pt=7; t='expandable (kind 11)'; off='0,1' ;;
        quotient) c='#2ca02c'; pt=5; t='quotient (kind 12)'; off='0,-1' ;;
        pocket) c='#9467bd'; pt=9; t='pocket (kind 13)'; off='0,1' ;;
        esac
        printf ", '%s' using 1:2 with linespoints lw 2 pt %d ps 1.2 lc rgb '%s' title '%s'" "$work/$k.dat" "$pt" "$c" "$t"
        printf ", '%s' using 1:2:(sprintf('%%.3f %%%%', \$2)) with labels offset %s font ',9' tc rgb '%s' notitle" "$work/$k.dat" "$off" "$c"
    done
    echo
    echo "set title 'Memory: bits per key at each power of ten (bytes x 8 / keys)'"
    echo "unset logscale y"
    echo "set yrange [0:*]"
    echo "set offsets 0, 0, graph 0.12, 0"
    echo "set ylabel 'bits per key'"
    echo "set key bottom left box opaque"
    printf "plot"
    sep=""
    for k in $kinds; do
        case $k in
        expandable) c='#1f77b4'; pt=7; t='expandable (kind 11)'; off='0,1' ;;
        quotient) c='#2ca02c'; pt=5; t='quotient (kind 12)'; off='0,-1' ;;
        pocket) c='#9467bd'; pt=9; t='pocket (kind 13)'; off='0,1' ;;
        esac
        printf "%s '%s' using 1:3 with linespoints lw 2 pt %d ps 1.2 lc rgb '%s' title '%s'" "$sep" "$work/$k.dat" "$pt" "$c" "$t"
        printf ", '%s' using 1:3:(sprintf('%%.2f', \$3)) with labels offset %s font ',9' tc rgb '%s' notitle" "$work/$k.dat" "$off" "$c"
        sep=","
    done
    echo
    echo "unset multiplot"
} >"$gp"
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "expandable-1e9.sh: gnuplot not found and not installed: FIGURE SKIPPED (the page is written)" >&2
    figure="gnuplot was not found and could not be installed (Debian: gnuplot-nox)"
elif ! gnuplot "$gp"; then
    echo "expandable-1e9.sh: gnuplot failed on $gp: FIGURE SKIPPED (the page is written)" >&2
    figure="gnuplot failed on $gp"
else
    mv "$svg_tmp" "$out/$name.svg"
    echo "wrote $out/$name.svg"
fi

# The page.
md_tmp=$work/$name.md
{
    echo "# Grown from 1,000 keys to $max keys: measured fpp and bits per key"
    echo
    echo "Generated by \`scripts/expandable-1e9.sh --kind $kind $max\` (do not edit: run it again)."
    echo "Each kind grown one key at a time from a filter of capacity 1,000 at a 1 % target"
    echo "(\`build/bench/expandable-bench --kind KIND --max $max --absent $absent --grow-only\`, one"
    echo "process per kind); at every power of ten every key added so far is checked present (one"
    echo "key at a time, batched hashes, packed keys; a false negative ends the run, and this page is"
    echo "only written when none was found) and the rate is measured on $absent keys never added."
    echo
    echo "- commit: $commit"
    echo "- date: $started to $ended"
    echo "- machine: $cpu, $ncpu CPUs, ${memtotal:-unknown} memory"
    if [ -z "$figure" ]; then
        echo "- figure: [$name.svg]($name.svg)"
    else
        echo "- figure: skipped ($figure)"
    fi
    for k in $kinds; do
        log=$work/$k.log
        echo
        case $k in
        expandable) echo "## The expandable kind (kind 11)" ;;
        quotient) echo "## The quotient kind (kind 12)" ;;
        pocket) echo "## The pocket kind (kind 13)" ;;
        esac
        echo
        if [ -f "$work/$k.time1" ]; then
            read -r secs kib <"$work/$k.time1" || true
            echo "Run time $(awk -v s="$secs" 'BEGIN { printf "%.0f s (%.1f min)", s, s / 60 }'), peak resident memory $(human_kib "$kib") ($kib KiB; \`/usr/bin/time -f \"%e %M\"\`)."
        else
            echo "Run time and peak memory: not measured (/usr/bin/time missing)."
        fi
        echo
        # The bench's powers-of-ten table, as printed: the "|" lines after
        # its "## Grown from" heading, up to the first other line.
        awk '/^## Grown from/ { on = 1; next }
             on && /^\|/ { print; seen = 1; next }
             on && seen { exit }' "$log"
        echo
        grep -E '^(Load average|Highest measured fpp|Amortized add while growing|PASS|FAIL)' "$log" |
            sed 's/^/- /'
    done
} >"$md_tmp"
mv "$md_tmp" "$out/$name.md"
echo "wrote $out/$name.md"
[ -z "$figure" ] || echo "expandable-1e9.sh: the figure was skipped ($figure)" >&2
