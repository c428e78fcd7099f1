#!/bin/sh
# tool-bench.sh - benchmarks of whole amq commands against their peers,
# measured in the same run on the same generated files:
#
#   1. dedup of 10M lines with 50 % duplicates vs LC_ALL=C sort -u and
#      awk '!seen[$0]++' (wall time and peak memory; target: >= 5x faster
#      than sort -u with <= 1/5 of its peak memory);
#   2. dedup of 200M "First|Last" names (~3.6 GB, Zipf-distributed name
#      lists: bench/tool/gen-lines.c); target: under 2 minutes;
#   3. amq add / amq query of 10M lines vs the bloom tool of Debian's
#      golang-github-dcso-bloom-cli (target: >= 10x faster);
#   4. amq add of 1,000 keys to a 1 GiB filter in place vs a whole-file
#      rewrite (bench/tool/incremental-add.sh; INCR=0 skips it).
#
# usage: bench/tool/tool-bench.sh [AMQ]     (default build/amq)
# Environment: REPS (default 3; each row reports the best and the worst),
#   NAMES (default 200000000; 0 skips row 2), BENCH_DIR (default
#   $TMPDIR/amq-tool-bench; the big files are deleted at the end),
#   OUT (default docs/benchmarks-tool.md), NAMES_SORT=1 also runs sort -u
#   on the names (minutes, GBs).
# Peak memory is getrusage's maxrss as /usr/bin/time -f %M reports it.
set -u
AMQ=${1:-build/amq}
case "$AMQ" in /*) ;; *) AMQ="$PWD/$AMQ" ;; esac
REPS=${REPS:-3}
NAMES=${NAMES:-200000000}
OUT=${OUT:-docs/benchmarks-tool.md}
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac
SRC=$(cd "$(dirname "$0")" && pwd)
DIR=${BENCH_DIR:-${TMPDIR:-/tmp}/amq-tool-bench}
TIME=/usr/bin/time
CC=${CC:-cc}

[ -x "$AMQ" ] || { echo "tool-bench: $AMQ is not built (make)" >&2; exit 2; }
[ -x "$TIME" ] || { echo "tool-bench: needs GNU time ($TIME; Debian package 'time')" >&2; exit 2; }
mkdir -p "$DIR" || exit 2
trap 'rm -f "$DIR"/*.txt "$DIR"/*.out "$DIR"/*.amq "$DIR"/*.bloom "$DIR/read-lines" "$DIR/gen-lines"' EXIT
"$CC" -O2 -std=c11 -o "$DIR/gen-lines" "$SRC/gen-lines.c" -lm || exit 2
GEN="$DIR/gen-lines"

# free_gb PATH: free space of PATH's file system in GB.
free_gb() { df -Pk "$1" | awk 'NR == 2 { printf "%d", $4 / 1048576 }'; }

# measure NAME CMD : runs sh -c CMD REPS times; sets best/worst wall time (s)
# and the peak RSS (KiB) of the best run; prints a line per run.
measure() {
    name=$1
    cmd=$2
    best=""
    worst=""
    rss=""
    i=0
    while [ "$i" -lt "$REPS" ]; do
        i=$((i + 1))
        sync
        "$TIME" -f "%e %M" -o "$DIR/time.txt" sh -c "$cmd" || {
            echo "tool-bench: '$cmd' failed" >&2
            exit 1
        }
        set -- $(tail -n 1 "$DIR/time.txt")
        echo "  $name run $i: $1 s, $2 KiB" >&2
        if [ -z "$best" ] || awk -v a="$1" -v b="$best" 'BEGIN { exit !(a < b) }'; then
            best=$1
            rss=$2
        fi
        if [ -z "$worst" ] || awk -v a="$1" -v b="$worst" 'BEGIN { exit !(a > b) }'; then
            worst=$1
        fi
    done
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "inf" }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }

rows=""
row() { rows="$rows$1
"; }

start_load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "tool-bench: data and temporary files in $DIR ($(free_gb "$DIR") GB free)" >&2

# ---- 1. dedup, 10M lines, 50 % duplicates -------------------------------------------
echo "tool-bench: generating 10M lines with 50 % duplicates" >&2
"$GEN" dups 10000000 0.5 7 >"$DIR/d10m.txt"
"$CC" -O2 -std=c11 -o "$DIR/read-lines" "$SRC/read-lines.c" || exit 2
"$DIR/read-lines" "$DIR/d10m.txt" "$REPS" >"$DIR/read-lines.out"
awk '!seen[$0]++' "$DIR/d10m.txt" >"$DIR/awk.out"
"$AMQ" dedup "$DIR/d10m.txt" >"$DIR/amq.out"
cmp -s "$DIR/awk.out" "$DIR/amq.out" || { echo "tool-bench: amq dedup differs from awk" >&2; exit 1; }
measure "amq dedup" "'$AMQ' dedup '$DIR/d10m.txt' >/dev/null"
a_t=$best a_w=$worst a_m=$rss
measure "amq dedup --threads 1" "'$AMQ' dedup --threads 1 '$DIR/d10m.txt' >/dev/null"
t1_t=$best t1_w=$worst t1_m=$rss
measure "sort -u" "LC_ALL=C sort -u '$DIR/d10m.txt' >/dev/null"
s_t=$best s_w=$worst s_m=$rss
measure "awk" "awk '!seen[\$0]++' '$DIR/d10m.txt' >/dev/null"
k_t=$best k_w=$worst k_m=$rss
row "| dedup 10M lines, 50 % dup. | \`amq dedup\` | $a_t s ($a_w) | $(mib "$a_m") MiB | 1 |"
row "| | \`amq dedup --threads 1\` (one thread) | $t1_t s ($t1_w) | $(mib "$t1_m") MiB | the default threads save $(awk -v a="$t1_t" -v b="$a_t" 'BEGIN { printf "%.0f", (a - b) / a * 100 }') % |"
row "| | \`LC_ALL=C sort -u\` | $s_t s ($s_w) | $(mib "$s_m") MiB | amq $(ratio "$s_t" "$a_t")x faster, $(ratio "$s_m" "$a_m")x less memory |"
row "| | \`awk '!seen[\$0]++'\` | $k_t s ($k_w) | $(mib "$k_m") MiB | amq $(ratio "$k_t" "$a_t")x faster, $(ratio "$k_m" "$a_m")x less memory |"
dedup_speed=$(ratio "$s_t" "$a_t")
dedup_mem=$(ratio "$s_m" "$a_m")
rm -f "$DIR/d10m.txt" "$DIR/awk.out" "$DIR/amq.out"

# ---- 3. add / query vs dcso bloom ------------------------------------------------------------
if command -v bloom >/dev/null 2>&1; then
    echo "tool-bench: generating 10M keys and 10M queries (half present)" >&2
    "$GEN" keys 10000000 0 1 >"$DIR/keys.txt"
    { "$GEN" keys 5000000 0 2; "$GEN" keys 5000000 10000000 3; } >"$DIR/queries.txt"
    measure "amq create+add" "rm -f '$DIR/f.amq'; '$AMQ' create '$DIR/f.amq' --capacity 10M --fpp 0.01 && '$AMQ' add '$DIR/f.amq' '$DIR/keys.txt'"
    aa_t=$best aa_w=$worst aa_m=$rss
    measure "bloom create+insert" "rm -f '$DIR/f.bloom'; bloom create -n 10000000 -p 0.01 '$DIR/f.bloom' && bloom insert '$DIR/f.bloom' <'$DIR/keys.txt'"
    ba_t=$best ba_w=$worst ba_m=$rss
    measure "amq query" "'$AMQ' query '$DIR/f.amq' '$DIR/queries.txt' >/dev/null; [ \$? -le 1 ]"
    aq_t=$best aq_w=$worst aq_m=$rss
    measure "bloom check" "bloom check '$DIR/f.bloom' <'$DIR/queries.txt' >/dev/null"
    bq_t=$best bq_w=$worst bq_m=$rss
    blocked=""
    if "$AMQ" create "$DIR/probe.amq" --type blocked --capacity 10 >/dev/null 2>&1; then
        measure "amq create+add (blocked)" "rm -f '$DIR/fb.amq'; '$AMQ' create '$DIR/fb.amq' --type blocked --capacity 10M --fpp 0.01 && '$AMQ' add '$DIR/fb.amq' '$DIR/keys.txt'"
        ab_t=$best ab_w=$worst ab_m=$rss
        measure "amq query (blocked)" "'$AMQ' query '$DIR/fb.amq' '$DIR/queries.txt' >/dev/null; [ \$? -le 1 ]"
        qb_t=$best qb_w=$worst qb_m=$rss
        blocked=1
    fi
    n_amq=$("$AMQ" query -c "$DIR/f.amq" "$DIR/queries.txt")
    n_bloom=$(bloom check "$DIR/f.bloom" <"$DIR/queries.txt" | wc -l)
    add_speed="$(ratio "$ba_t" "$aa_t")x"
    query_speed="$(ratio "$bq_t" "$aq_t")x"
    row "| create + add 10M keys | \`amq create; amq add\` | $aa_t s ($aa_w) | $(mib "$aa_m") MiB | 1 |"
    row "| | \`bloom create; bloom insert\` (dcso) | $ba_t s ($ba_w) | $(mib "$ba_m") MiB | amq $(ratio "$ba_t" "$aa_t")x faster |"
    if [ -n "$blocked" ]; then
        row "| | \`amq create --type blocked; amq add\` | $ab_t s ($ab_w) | $(mib "$ab_m") MiB | $(ratio "$ba_t" "$ab_t")x faster than dcso |"
    fi
    row "| query 10M lines (5M present) | \`amq query\` | $aq_t s ($aq_w) | $(mib "$aq_m") MiB | 1 ($n_amq selected) |"
    row "| | \`bloom check\` (dcso) | $bq_t s ($bq_w) | $(mib "$bq_m") MiB | amq $(ratio "$bq_t" "$aq_t")x faster ($n_bloom selected) |"
    if [ -n "$blocked" ]; then
        row "| | \`amq query\` (blocked filter) | $qb_t s ($qb_w) | $(mib "$qb_m") MiB | $(ratio "$bq_t" "$qb_t")x faster than dcso |"
        add_speed="$add_speed (blocked filter: $(ratio "$ba_t" "$ab_t")x)"
        query_speed="$query_speed (blocked filter: $(ratio "$bq_t" "$qb_t")x)"
    fi
    rm -f "$DIR/keys.txt" "$DIR/queries.txt" "$DIR/f.amq" "$DIR/f.bloom" "$DIR/fb.amq" "$DIR/probe.amq"
else
    add_speed="n/a (no bloom tool)"
    query_speed="n/a"
fi

# ---- 2. dedup, 200M names --------------------------------------------------------------------
names_line="skipped (NAMES=0)"
if [ "$NAMES" -gt 0 ]; then
    need=$((NAMES / 50000000 * 4 + 2))
    if [ "$(free_gb "$DIR")" -lt "$need" ]; then
        echo "tool-bench: $DIR has less than $need GB free: names row skipped" >&2
        names_line="skipped (less than $need GB free in $DIR)"
    else
        echo "tool-bench: generating $NAMES names" >&2
        "$GEN" names "$NAMES" 42 >"$DIR/names.txt"
        size=$(wc -c <"$DIR/names.txt")
        REPS_SAVED=$REPS
        REPS=${NAMES_REPS:-2}
        "$AMQ" dedup --stats "$DIR/names.txt" 2>"$DIR/names-stats.out" >/dev/null
        measure "amq dedup names" "'$AMQ' dedup '$DIR/names.txt' >/dev/null"
        n_t=$best n_w=$worst n_m=$rss
        distinct=$(sed -n 's/^distinct out: *//p' "$DIR/names-stats.out")
        row "| dedup $NAMES names ($(awk -v s="$size" 'BEGIN { printf "%.2f GB", s / 1e9 }'), $distinct distinct) | \`amq dedup\` | $n_t s ($n_w) | $(mib "$n_m") MiB | target < 120 s |"
        if [ "${NAMES_SORT:-0}" = 1 ]; then
            measure "sort -u names" "LC_ALL=C sort -u -S 50% -T '$DIR' '$DIR/names.txt' >/dev/null"
            row "| | \`LC_ALL=C sort -u\` | $best s ($worst) | $(mib "$rss") MiB | amq $(ratio "$best" "$n_t")x faster |"
        fi
        REPS=$REPS_SAVED
        names_line="$n_t s (best of ${NAMES_REPS:-2}; worst $n_w s), peak memory $(mib "$n_m") MiB"
        rm -f "$DIR/names.txt"
    fi
fi

# ---- 4. incremental add: 1,000 keys into a 1 GiB filter, in place vs rewrite -------------------
incr_rows=""
if [ "${INCR:-1}" -ne 0 ] && [ "$(free_gb "$DIR")" -ge 3 ]; then
    incr_rows=$(REPS=$REPS BENCH_DIR="$DIR/incr" sh "$SRC/incremental-add.sh" "$AMQ") || exit 1
    row "$incr_rows"
fi

end_load=$(cut -d' ' -f1-3 /proc/loadavg)
cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)
mem=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
{
    echo "# Benchmarks of the amq tool"
    echo
    echo "Written by \`make bench-tool\` (bench/tool/tool-bench.sh) on $(date -u '+%Y-%m-%d %H:%M UTC'):"
    echo "$cpu, $(nproc) cores, $mem; load average $start_load at the start, $end_load at the end."
    echo "Each command ran $REPS times on the same files in the same run; times are the best run"
    echo "(worst in parentheses), memory is the peak RSS (getrusage maxrss) of the best run."
    echo "Data: bench/tool/gen-lines.c (10M 16-hex-digit IDs of which 50 % repeats; Zipf-distributed"
    echo "\"First|Last\" names; distinct \"key-N\" lines)."
    echo
    echo "| Work | Command | Time (worst) | Peak memory | amq vs peer |"
    echo "|---|---|---|---|---|"
    printf "%s" "$rows"
    echo
    echo "Finding lines in the 10M-line file (170 MB, in the page cache; bench/tool/read-lines.c, best"
    echo "of $REPS): amq reads with read+mask."
    echo
    echo '```'
    cat "$DIR/read-lines.out"
    echo '```'
    echo
    echo "Summary: dedup 10M vs \`sort -u\`: ${dedup_speed}x faster with ${dedup_mem}x less memory"
    echo "(targets 5x and 5x); create + add vs dcso bloom: $add_speed, query: $query_speed"
    echo "(target 10x); 200M names: $names_line (target 120 s)."
} >"$OUT"
cat "$OUT"
