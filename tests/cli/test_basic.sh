#!/bin/sh
# test_basic.sh - hash, create, add, query, info: outputs, exit codes, errors.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

CASE=hash-vectors
expect_eq "murmur3_128 hello" "cbd8a7b341bd9b02 5b1e906a48ae1d19" "$("$AMQ" hash hello)"
expect_eq "murmur3_32 hello" "248bfa47" "$("$AMQ" hash --algo murmur3_32 hello)"
expect_eq "murmur3_32 a" "3c2569b2" "$("$AMQ" hash --algo murmur3_32 a)"
expect_eq "fnv1a32 a" "e40c292c" "$("$AMQ" hash --algo fnv1a32 a)"
expect_eq "fnv1a64 foobar" "85944171f73967e8" "$("$AMQ" hash --algo fnv1a64 foobar)"
expect_eq "xxh3 empty" "2d06800538d394c2" "$("$AMQ" hash --algo xxh3 '')"
expect_eq "murmur3_32 seed" "2fa826cd" \
    "$("$AMQ" hash --algo murmur3_32 --seed 0x9747b28c 'The quick brown fox jumps over the lazy dog')"
expect_eq "stdin lines, CR stripped" "248bfa47
3c2569b2
00000000" "$(printf 'hello\r\na\n\n' | "$AMQ" hash --algo murmur3_32)"
expect_eq "last line without newline" "3c2569b2" "$(printf 'a' | "$AMQ" hash --algo murmur3_32)"

CASE=hash-errors
expect_status 2 "$AMQ" hash --algo md5 x
expect_stderr_has "unknown algorithm 'md5'"
expect_status 2 "$AMQ" hash --algo murmur3_32 --seed 4294967296 x
expect_stderr_has "32-bit seed"
expect_status 2 "$AMQ" hash --algo fnv1a64 --seed 1 x
expect_status 2 "$AMQ" hash --seed -3 x
expect_status 2 "$AMQ" hash --seed 12abc x

CASE=create
seq 1 20000 >keys
seq 20001 40000 >absent
expect_status 0 "$AMQ" create f.amq --capacity 20000 --fpp 0.01
expect_status 2 "$AMQ" create f.amq --capacity 20000
expect_stderr_has "file exists"
expect_status 0 "$AMQ" create f.amq --capacity 20k --fpp 1% --force
expect_status 2 "$AMQ" create g.amq
expect_stderr_has "--capacity is required"
expect_status 2 "$AMQ" create g.amq --capacity 0
expect_stderr_has "capacity"
expect_status 2 "$AMQ" create g.amq --capacity 10 --fpp 1.5
expect_status 2 "$AMQ" create g.amq --capacity 10 --fpp nan
expect_status 2 "$AMQ" create g.amq --capacity 10 --fpp 0
expect_status 2 "$AMQ" create g.amq --capacity -5
expect_status 2 "$AMQ" create g.amq --capacity 1.5
expect_status 2 "$AMQ" create g.amq --capacity 99999999999999999999999
expect_status 2 "$AMQ" create g.amq --capacity 10 --type nosuch
expect_stderr_has "unknown --type 'nosuch'"
expect_status 2 "$AMQ" create g.amq --capacity 10 --bucket-size 4
expect_stderr_has "--bucket-size does not apply to --type bloom"
expect_status 2 "$AMQ" create g.amq --capacity 10 --bits 100
expect_status 2 "$AMQ" create g.amq --capacity 10 --hash murmur3 --seed 0x100000000
expect_status 0 "$AMQ" create g.amq --bits 1000 --hashes 3
expect_status 0 "$AMQ" create h.amq --capacity 1e3 --bits-per-key 10 --hash murmur3 --seed 5
expect_status 2 "$AMQ" create /nonexistent-dir/x.amq --capacity 10
expect_stderr_has "/nonexistent-dir"
[ -e g2.amq ] && fail "a failed create left a file"

CASE=add-query
expect_status 0 "$AMQ" add f.amq keys
expect_eq "every key present" 20000 "$("$AMQ" query -c f.amq keys)"
expect_eq "none missing" 0 "$("$AMQ" query -v -c f.amq keys)"
fp=$("$AMQ" query -c f.amq absent)
[ "$fp" -lt 320 ] && [ "$fp" -gt 100 ] || fail "false positives $fp not near 1% of 20000"
expect_eq "query prints selected lines" "$(seq 1 5)" "$(seq 1 5 | "$AMQ" query f.amq)"
expect_status 0 "$AMQ" query -q f.amq keys
expect_status 1 sh -c "echo definitely-absent-key | '$AMQ' query f.amq"
expect_status 1 sh -c "printf '' | '$AMQ' query f.amq"
expect_eq "-v complements" 20000 "$(cat keys absent | "$AMQ" query -v -c f.amq | awk '{print $1 + '"$fp"'}')"
expect_eq "--trust answers the same" "$("$AMQ" query -c f.amq absent)" "$("$AMQ" query --trust -c f.amq absent)"
expect_eq "stdin and '-'" "$("$AMQ" query -c f.amq keys)" "$("$AMQ" query -c f.amq - <keys)"
expect_eq "several inputs" 40000 "$("$AMQ" query -c f.amq keys keys)"
expect_status 2 "$AMQ" query f.amq keys missing-input
expect_stderr_has "missing-input"

CASE=keys-as-lines
"$AMQ" create k.amq --capacity 100 >/dev/null
printf 'crlf\r\n\nlast' | "$AMQ" add k.amq
expect_eq "CR is not part of the key" "crlf" "$(printf 'crlf\n' | "$AMQ" query k.amq)"
expect_eq "output keeps the line as read" "crlf$(printf '\r')" "$(printf 'crlf\r\n' | "$AMQ" query k.amq)"
expect_eq "empty line is a key" 1 "$(printf '\n' | "$AMQ" query -c k.amq)"
expect_eq "last line without newline" "last" "$(printf 'last' | "$AMQ" query k.amq)"
awk 'BEGIN { s = ""; for (i = 0; i < 200000; i++) s = s "x"; print s }' >long
"$AMQ" add k.amq long
expect_eq "a 200 kB line" 1 "$("$AMQ" query -c k.amq long)"
expect_eq "a 200 kB line through a pipe" 1 "$(cat long | "$AMQ" query -c k.amq)"

CASE=info
"$AMQ" info f.amq >info.txt
grep -q '^kind: *bloom$' info.txt || fail "info kind: $(cat info.txt)"
grep -q '^bits: *191701$' info.txt || fail "info bits"
grep -q '^hashes: *7$' info.txt || fail "info hashes"
grep -q '^capacity: *20000 items$' info.txt || fail "info capacity"
grep -q '^bytes: *23968 ' info.txt || fail "info bytes"
"$AMQ" info --json f.amq >info.json
/usr/bin/python3 -c '
import json, sys
d = json.load(open("info.json"))
assert d["kind"] == "bloom", d
assert d["bits"] == 191701 and d["hashes"] == 7, d
assert d["capacity"] == 20000 and 19900 <= d["items"] <= 20000, d
assert 0.009 < d["fpp_now"] < 0.011, d
' || fail "info --json: $(cat info.json)"
"$AMQ" create small.amq --capacity 10 >/dev/null
seq 1 1000 | "$AMQ" add --allow-overfill small.amq 2>warn.txt
grep -q "over its capacity" warn.txt || fail "no over-capacity warning: $(cat warn.txt)"
"$AMQ" info small.amq >info-out.txt 2>&1
expect_eq "info warns once about the overfilled filter" 1 "$(grep -c "over its capacity" info-out.txt)"

CASE=damaged-files
cp f.amq damaged.amq
printf 'X' | dd of=damaged.amq bs=1 seek=5000 conv=notrunc 2>/dev/null
expect_status 2 "$AMQ" info damaged.amq
expect_stderr_has "damaged.amq"
expect_stderr_has "checksum"
expect_status 2 "$AMQ" query damaged.amq keys
expect_status 2 "$AMQ" add damaged.amq keys
head -c 1000 f.amq >trunc.amq
expect_status 2 "$AMQ" query trunc.amq keys
expect_stderr_has "truncated"
echo "plain text" >text.amq
expect_status 2 "$AMQ" info text.amq
expect_stderr_has "not an amq filter file"
expect_status 2 "$AMQ" info .
cp f.amq before.amq
expect_status 2 "$AMQ" add f.amq keys no-such-input
expect_same_file before.amq f.amq

CASE=usage
expect_status 0 "$AMQ" --help
expect_status 0 "$AMQ" --version
expect_status 2 "$AMQ"
expect_status 2 "$AMQ" frobnicate
expect_stderr_has "'frobnicate' is not an amq command"
for c in create add query info hash; do
    expect_status 0 "$AMQ" "$c" --help
    expect_status 0 "$AMQ" help "$c"
    expect_status 2 "$AMQ" "$c" --no-such-option
done

CASE=create-geometry-conflicts
# --bits M --hashes K fix the geometry: a --bits-per-key beside them was silently ignored.
expect_status 2 "$AMQ" create geo.amq --capacity 1000 --bits 1000 --hashes 3 --bits-per-key 50
expect_stderr_has "--bits-per-key and --bits/--hashes both size the filter"
[ -e geo.amq ] && fail "a refused create wrote its file"
expect_status 0 "$AMQ" create geo.amq --bits 1000 --hashes 3

finish
