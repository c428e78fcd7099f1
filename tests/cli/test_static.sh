#!/bin/sh
# test_static.sh - amq build --type fuse|ribbon: every key found, rates near
# their targets, info against the bound, and add/remove refused with the
# file unchanged.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

seq 1 30000 >keys
seq 1 10000 >>keys          # duplicates: 30,000 distinct
seq 30001 230000 >absent

CASE=static-fuse
expect_status 0 "$AMQ" build f.amq keys --type fuse
expect_eq "fuse: every key in" 40000 "$("$AMQ" query -c f.amq keys)"
fp=$("$AMQ" query -c f.amq absent)
# fpp 1/256 of 200,000 = 781
[ "$fp" -gt 600 ] && [ "$fp" -lt 980 ] || fail "fuse false positives $fp not near 781"
expect_eq "fuse: items" 30000 \
    "$("$AMQ" info --json f.amq | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["items"])')"
"$AMQ" info f.amq >info.txt
grep -q "bound log2(1/fpp) = 8.00" info.txt || fail "info has no bound: $(cat info.txt)"
expect_eq "fuse mmap'd trusted query" 40000 "$("$AMQ" query -c --trust f.amq keys)"
# --stats of a static build: the distinct keys are the construction's (it said 0, not counted)
for kind in fuse ribbon; do
    "$AMQ" build "st-$kind.amq" keys --type "$kind" --stats --json 2>st.json
    expect_eq "$kind --stats: keys read, distinct, exact, capacity" "40000 30000 true 30000" \
        "$(/usr/bin/python3 -c 'import json; j = json.load(open("st.json")); print(j["keys_read"], j["distinct_keys"], str(j["counted_exactly"]).lower(), j["capacity"])')"
done

CASE=static-ribbon
expect_status 0 "$AMQ" build r.amq keys --type ribbon --fpp 0.02
expect_eq "ribbon: every key in" 40000 "$("$AMQ" query -c r.amq keys)"
fp=$("$AMQ" query -c r.amq absent)
[ "$fp" -gt 3400 ] && [ "$fp" -lt 4600 ] || fail "ribbon false positives $fp not near 4000"

CASE=static-refusals
cp f.amq before.amq
echo 999999 >new
expect_status 2 "$AMQ" add f.amq new
expect_stderr_has "static"
expect_status 2 "$AMQ" remove f.amq keys
expect_stderr_has "static"
cmp -s f.amq before.amq || fail "a refused add or remove changed the file"
expect_status 2 "$AMQ" build c.amq keys --type fuse --capacity 10
expect_stderr_has "does not apply"
expect_status 2 "$AMQ" create e.amq --type ribbon --capacity 10
expect_stderr_has "static"
# A rate fuse's fingerprints cannot meet is refused (it was built at 1.5e-05 silently).
expect_status 2 "$AMQ" build lo.amq keys --type fuse --fpp 1e-9
expect_stderr_has "a fuse filter's rate is that of its 8- or 16-bit fingerprints"
[ ! -e lo.amq ] || fail "a refused build wrote lo.amq"
expect_status 0 "$AMQ" build lo.amq keys --type fuse --fpp 2e-5
# The 16-bit rate --help names is accepted (it said 1.5e-05, under 2^-16, which is refused).
rate=$("$AMQ" build --help | tr -s ' \n' '  ' | sed -n 's/.*(16 bits, \([0-9.e-]*\);.*/\1/p')
expect_status 0 "$AMQ" build help-rate.amq keys --type fuse --fpp "$rate" --force
expect_status 2 "$AMQ" build lo.amq keys --type fuse --fpp 1.5e-5 --force
expect_stderr_has "2^-16 (1.53e-05) at best, not 1.5e-05"
"$AMQ" info lo.amq | grep -q "false positives:  1.53e-05 now" ||
    fail "16-bit fuse: $("$AMQ" info lo.amq | grep -i false)"

CASE=static-spill-error
# Past 256 MiB of hashes (2^25 keys) the build spills to $TMPDIR: a missing one is named, with
# why (it said "input/output error (temporary files in $TMPDIR or /tmp)").
expect_status 2 sh -c 'seq 1 33600000 | TMPDIR="$1" "$2" build sp.amq --type fuse -q' sh \
    "$T/no-such-dir" "$AMQ"
expect_stderr_has "temporary files in $T/no-such-dir"
expect_stderr_has "No such file or directory"
[ ! -e sp.amq ] || fail "a failed build wrote sp.amq"

finish
