#!/bin/sh
# ab-blocked.sh - A/B of the blocked kind's batched loops: the benchmark of
# an older commit against this tree's, run by turns on the same keys.
#
#   scripts/ab-blocked.sh [--base COMMIT] [--old BIN] [--new BIN] [--rounds R]
#                         [--n N,N,...] [--reps R] [--queries Q]
#
# Rows: "amq blocked, batched" (8-byte keys hashed in the loop) and "amq
# blocked, batched, key as hash" (the key is the 64-bit hash): batched add,
# batched query of present and of absent keys, ns per key.  Each round runs
# both binaries once per n (one process per n, so only one large filter is
# in memory); the order alternates by round so that a drift of the machine
# load falls on both alike.  Prints per row the median over rounds of each
# binary and the median of the rounds' paired new/old ratios with their
# range: a ratio whose range straddles 1 is within the noise.
#
# --old defaults to amq-bench built from --base (default: the parent of
# b3e79b7, the last commit whose blocked loops were statement macros) in a
# temporary directory; --new to build/bench/amq-bench.
set -eu
base=b3e79b7^
old=
new=build/bench/amq-bench
rounds=5
ns=1000000,100000000
reps=3
queries=10000000
while [ $# -gt 0 ]; do
    case $1 in
    --base) base=$2; shift 2 ;;
    --old) old=$2; shift 2 ;;
    --new) new=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --n) ns=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --queries) queries=$2; shift 2 ;;
    *) echo "usage: $0 [--base COMMIT] [--old BIN] [--new BIN] [--rounds R] [--n N,...]" \
            "[--reps R] [--queries Q]" >&2; exit 2 ;;
    esac
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/amq-ab-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ -z "$old" ]; then
    echo "ab-blocked: building amq-bench at $base in $tmp/old ..." >&2
    mkdir "$tmp/old"
    git archive "$base" | tar -x -C "$tmp/old"
    nice make -C "$tmp/old" -j2 build/bench/amq-bench >"$tmp/old-build.log" 2>&1 ||
        { cat "$tmp/old-build.log" >&2; exit 1; }
    old=$tmp/old/build/bench/amq-bench
fi
[ -x "$old" ] && [ -x "$new" ] || { echo "ab-blocked: $old or $new is missing" >&2; exit 1; }

# run VERSION BIN N: appends "version n row insert present absent" lines.
run() {
    "$2" --n "$3" --reps "$reps" --queries "$queries" --only 'amq blocked, batched' \
        --no-cold --no-sweep --no-write 2>/dev/null |
        awk -v v="$1" -v n="$3" '
            /^  amq blocked, batched, key as hash / { print v, n, "key-as-hash", $7, $8, $9; next }
            /^  amq blocked, batched / { print v, n, "8-byte-keys", $4, $5, $6 }' >>"$tmp/results"
}
: >"$tmp/results"
r=1
while [ "$r" -le "$rounds" ]; do
    for n in $(echo "$ns" | tr ',' ' '); do
        if [ $((r % 2)) -eq 1 ]; then
            run old "$old" "$n"; run new "$new" "$n"
        else
            run new "$new" "$n"; run old "$old" "$n"
        fi
    done
    echo "ab-blocked: round $r of $rounds done" >&2
    r=$((r + 1))
done

# Per (n, row, operation): medians of old and new, and the paired ratios
# (round i's new / round i's old) as median [min, max].
awk '
function med(a, k,    i, j, t) {
    for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{
    key = $2 " " $3
    if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
    c = ++cnt[$1, key]
    for (o = 1; o <= 3; o++) val[$1, key, o, c] = $(3 + o)
}
END {
    split("add query-present query-absent", op, " ")
    printf "%-11s %-12s %-14s %9s %9s %8s  %s\n", "n", "keys", "batched", "old ns", "new ns", "new/old", "paired ratios median [min, max]"
    for (i = 1; i <= nk; i++) {
        key = order[i]; split(key, kf, " ")
        k = cnt["new", key] < cnt["old", key] ? cnt["new", key] : cnt["old", key]
        for (o = 1; o <= 3; o++) {
            for (j = 1; j <= k; j++) { a[j] = val["old", key, o, j]; b[j] = val["new", key, o, j];
                                       q[j] = a[j] > 0 ? b[j] / a[j] : 0 }
            mo = med(a, k); mn = med(b, k)
            lo = q[1]; hi = q[1]; for (j = 2; j <= k; j++) { if (q[j] < lo) lo = q[j]; if (q[j] > hi) hi = q[j] }
            mq = med(q, k)
            printf "%-11s %-12s %-14s %9.2f %9.2f %7.3fx  %.3f [%.3f, %.3f]\n", kf[1], kf[2], op[o], mo, mn, mn / mo, mq, lo, hi
        }
    }
}' "$tmp/results"
