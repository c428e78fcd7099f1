#!/bin/sh
# demo.sh AMQ - the phone-number case of the seeds, end to end:
# 5,000,000 known numbers, 10,000 new ones to check (half of them known).
set -e
AMQ=${1:-build/amq}
case "$AMQ" in /*) ;; *) AMQ="$PWD/$AMQ" ;; esac
KNOWN=${DEMO_KNOWN:-5000000}
QUERIES=${DEMO_QUERIES:-10000}
FPP=${DEMO_FPP:-0.01}
dir=$(mktemp -d "${TMPDIR:-/tmp}/amq-demo-XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f s", b - a }'; }

echo "amq demo: is a new phone number one of $KNOWN known ones?"
echo

# Numbers 13xxxxxxxxx: i -> 13000000000 + (7919 i + 12345) mod 10^9 is one to
# one for i < 10^9, so known (i < KNOWN) and new (i >= KNOWN) never collide.
t0=$(now)
awk -v n="$KNOWN" 'BEGIN { for (i = 0; i < n; i++) printf "13%09d\n", (7919 * i + 12345) % 1000000000 }' >known.txt
half=$((QUERIES / 2))
awk -v n="$KNOWN" -v h="$half" 'BEGIN {
    srand(42)
    for (j = 0; j < h; j++) { i = int(rand() * n); printf "13%09d\n", (7919 * i + 12345) % 1000000000 }
}' >queries-known.txt
awk -v n="$KNOWN" -v h="$half" 'BEGIN {
    for (j = 0; j < h; j++) { i = n + j * 17 + 1; printf "13%09d\n", (7919 * i + 12345) % 1000000000 }
}' >queries-new.txt
cat queries-known.txt queries-new.txt >queries.txt
t1=$(now)
printf "%-44s %s\n" "generate $KNOWN known + $QUERIES query numbers" "$(elapsed "$t0" "$t1")"

"$AMQ" create phones.amq --type bloom --capacity "$KNOWN" --fpp "$FPP"
t2=$(now)
printf "%-44s %s\n" "amq create (capacity $KNOWN, fpp $FPP)" "$(elapsed "$t1" "$t2")"

"$AMQ" add phones.amq known.txt
t3=$(now)
printf "%-44s %s\n" "amq add: $KNOWN numbers" "$(elapsed "$t2" "$t3")"

"$AMQ" query phones.amq queries.txt >maybe-known.txt || true
t4=$(now)
printf "%-44s %s\n" "amq query: $QUERIES numbers" "$(elapsed "$t3" "$t4")"

found_known=$("$AMQ" query -c phones.amq queries-known.txt || true)
false_pos=$("$AMQ" query -c phones.amq queries-new.txt || true)
echo
echo "known numbers reported present: $found_known of $half (a Bloom filter never misses)"
awk -v fp="$false_pos" -v n="$half" -v p="$FPP" 'BEGIN {
    printf "new numbers reported present:   %d of %d: false-positive rate %.3f %% (expected %.3f %%)\n",
        fp, n, 100 * fp / n, 100 * p
}'
echo "selected lines written:          $(wc -l <maybe-known.txt) (known + false positives)"
echo
"$AMQ" info phones.amq | grep -E '^(kind|items|bytes|bits per item|hashes|false positives):'
size=$(wc -c <known.txt)
awk -v f="$(wc -c <phones.amq)" -v s="$size" 'BEGIN {
    printf "filter file %.1f MiB for %.1f MiB of numbers (%.1f%%)\n", f / 1048576, s / 1048576, 100 * f / s
}'
[ "$found_known" -eq "$half" ] || { echo "demo: a known number was missed" >&2; exit 1; }
