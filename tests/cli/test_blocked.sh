#!/bin/sh
# test_blocked.sh - the blocked and partitioned kinds through the tool:
# create, add, query (mapped, trusted or not), info, damaged files.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

seq 1 50000 >keys
seq 50001 100000 >absent

for type in blocked partitioned; do
    CASE=$type
    expect_status 0 "$AMQ" create $type.amq --type $type --capacity 50000 --fpp 0.01
    expect_status 0 "$AMQ" add $type.amq keys
    expect_eq "$type: every key present" 50000 "$("$AMQ" query -c $type.amq keys)"
    fp=$("$AMQ" query -c $type.amq absent)
    [ "$fp" -lt 650 ] && [ "$fp" -gt 350 ] || fail "$type: false positives $fp not near 1% of 50000"
    expect_eq "$type: --trust answers the same" "$fp" "$("$AMQ" query --trust -c $type.amq absent)"
    expect_eq "$type: lines" "$(seq 1 3)" "$(seq 1 3 | "$AMQ" query $type.amq)"
    "$AMQ" info $type.amq >info.txt
    grep -q "^kind: *$type\$" info.txt || fail "$type: info kind: $(cat info.txt)"
    grep -q '^hashes: *6$' info.txt || fail "$type: info hashes: $(cat info.txt)"
    grep -q '^capacity: *50000 items$' info.txt || fail "$type: info capacity"
done

CASE=blocked-sizing
expect_status 0 "$AMQ" create b12.amq --type blocked --capacity 1000 --bits-per-key 12
"$AMQ" info b12.amq | grep -q '^blocks: *24$' || fail "12 bits per key for 1000 keys: 24 blocks"
expect_status 2 "$AMQ" create x.amq --type blocked --capacity 1000 --partitions 4
expect_stderr_has "--partitions does not apply to --type blocked"
expect_status 2 "$AMQ" create x.amq --type blocked --capacity 1000 --fpp 1e-300

CASE=partitions
expect_status 0 "$AMQ" create p9.amq --type partitioned --capacity 90000 --partitions 9
"$AMQ" info p9.amq | grep -q '^partitions: *9$' || fail "--partitions 9 not recorded"
expect_status 0 "$AMQ" add p9.amq keys
expect_eq "p9: every key present" 50000 "$("$AMQ" query -c p9.amq keys)"
expect_status 2 "$AMQ" create x.amq --type partitioned --capacity 10 --partitions 70000
# the bound is the partitioned kind's, as the man page says (the parser took up to 2^20)
expect_stderr_has "--partitions: 70000 is out of range [1, 65536]"

CASE=damaged-partition
cp p9.amq bad.amq
size=$(wc -c <bad.amq)
printf 'X' | dd of=bad.amq bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
expect_status 2 "$AMQ" query bad.amq keys
expect_stderr_has "checksum"
# Trusted, the damaged partition answers "may be present" (never a false
# negative); the others are unaffected.
expect_eq "trusted damaged file: no key lost" 50000 "$("$AMQ" query --trust -c bad.amq keys)"

finish
