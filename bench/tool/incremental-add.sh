#!/bin/sh
# incremental-add.sh - `amq add` of 1,000 keys to a 1 GiB filter: in place
# (the changed 4 KiB chunks through a journal, amq/inplace.h) beside the
# whole-file rewrite (`amq add --rewrite`), alternated in the same run;
# wall time and peak memory (GNU time).  Prints markdown table rows.
#
# usage: bench/tool/incremental-add.sh [AMQ]   (default build/amq)
# Environment: REPS (default 5), BENCH_DIR (default $TMPDIR/amq-incr-bench),
#   BITS (default 8589934592: a 1 GiB Bloom filter).
set -u
AMQ=${1:-build/amq}
case "$AMQ" in /*) ;; *) AMQ="$PWD/$AMQ" ;; esac
REPS=${REPS:-5}
BITS=${BITS:-8589934592}
DIR=${BENCH_DIR:-${TMPDIR:-/tmp}/amq-incr-bench}
TIME=/usr/bin/time
mkdir -p "$DIR" || exit 2
trap 'rm -f "$DIR"/*.amq "$DIR"/keys-* "$DIR"/time.txt' EXIT

# run_one CMD: wall seconds and peak KiB of one run, as "s kib".
run_one() {
    sync
    "$TIME" -f "%e %M" -o "$DIR/time.txt" sh -c "$1" || {
        echo "incremental-add: '$1' failed" >&2
        exit 1
    }
    tail -n 1 "$DIR/time.txt"
}

# median of the numbers on stdin
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for type in bloom blocked; do
    if [ "$type" = bloom ]; then
        "$AMQ" create "$DIR/f.amq" --bits "$BITS" --hashes 7 --force || exit 1
    else
        "$AMQ" create "$DIR/f.amq" --type blocked --capacity $((BITS / 10)) --force || exit 1
    fi
    size=$(stat -c %s "$DIR/f.amq")
    : >"$DIR/t-in"
    : >"$DIR/t-re"
    : >"$DIR/m-in"
    : >"$DIR/m-re"
    i=0
    while [ "$i" -lt "$REPS" ]; do
        i=$((i + 1))
        seq -f "in-$type-$i-%g" 1 1000 >"$DIR/keys-in"
        seq -f "re-$type-$i-%g" 1 1000 >"$DIR/keys-re"
        # Alternated, so that both see the same machine load.
        set -- $(run_one "'$AMQ' add --allow-overfill '$DIR/f.amq' '$DIR/keys-in'")
        echo "$1" >>"$DIR/t-in"
        echo "$2" >>"$DIR/m-in"
        set -- $(run_one "'$AMQ' add --allow-overfill --rewrite '$DIR/f.amq' '$DIR/keys-re'")
        echo "$1" >>"$DIR/t-re"
        echo "$2" >>"$DIR/m-re"
        echo "  $type rep $i: in place $(tail -n 1 "$DIR/t-in") s, rewrite $(tail -n 1 "$DIR/t-re") s" >&2
    done
    "$AMQ" info "$DIR/f.amq" >/dev/null || { echo "incremental-add: the file does not verify" >&2; exit 1; }
    tin=$(median <"$DIR/t-in")
    tre=$(median <"$DIR/t-re")
    min=$(median <"$DIR/m-in")
    mre=$(median <"$DIR/m-re")
    gib=$(awk -v s="$size" 'BEGIN { printf "%.2f GiB", s / 1073741824 }')
    echo "| add 1,000 keys to a $gib $type filter | \`amq add\` (in place) | $tin s | $(awk -v k="$min" 'BEGIN { printf "%.0f", k / 1024 }') MiB | $(awk -v a="$tre" -v b="$tin" 'BEGIN { if (b > 0) printf "%.0f", a / b; else print "inf" }')x faster than a rewrite |"
    echo "| | \`amq add --rewrite\` (whole file) | $tre s | $(awk -v k="$mre" 'BEGIN { printf "%.0f", k / 1024 }') MiB | 1 |"
    rm -f "$DIR/t-in" "$DIR/t-re" "$DIR/m-in" "$DIR/m-re"
done
