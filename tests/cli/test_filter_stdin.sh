#!/bin/sh
# A filter argument of '-' is standard input: info, query, merge's INs and
# export read the one filter piped in (up to the end its header declares),
# byte for byte as they read the file; what cannot work is refused by name.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

seq 1 3000 >keys
seq 2001 6000 >other
"$AMQ" create a.amq --capacity 200000 || fail "create a"
"$AMQ" add a.amq keys || fail "add a"
"$AMQ" create b.amq --capacity 200000 || fail "create b"
"$AMQ" add b.amq other || fail "add b"
# over 64 KiB: read in more than one piece
[ "$(wc -c <a.amq)" -gt 200000 ] || fail "a.amq is smaller than the test needs"

CASE=info
"$AMQ" info a.amq | sed 1d >want.txt
expect_status 0 sh -c "cat a.amq | '$AMQ' info -"
expect_eq "first line" "file:             -" "$(head -n 1 "$T/.out")"
sed 1d "$T/.out" >got.txt
expect_same_file want.txt got.txt
expect_status 0 sh -c "'$AMQ' info --json - <a.amq"
"$AMQ" info --json a.amq | sed 's/"file": "a.amq"/"file": "-"/' >want.json
expect_same_file want.json "$T/.out"

CASE=query
count=$("$AMQ" query -c a.amq other)
expect_status 0 sh -c "cat a.amq | '$AMQ' query -c - other"
expect_eq "count" "$count" "$(cat "$T/.out")"
expect_status 1 sh -c "cat a.amq | '$AMQ' query -q - /dev/null"
expect_status 2 sh -c "cat a.amq | '$AMQ' query -c -"
expect_stderr_has "query: FILE '-' is standard input: the keys must come from INPUT files"
expect_status 2 sh -c "cat a.amq | '$AMQ' query -c - other -"
expect_stderr_has "query: FILE '-' is standard input"

CASE=merge
expect_status 0 "$AMQ" merge ab.amq a.amq b.amq
expect_status 0 sh -c "cat a.amq | '$AMQ' merge ab1.amq - b.amq"
expect_same_file ab.amq ab1.amq
expect_status 0 sh -c "cat b.amq | '$AMQ' merge ab2.amq a.amq -"
expect_same_file ab.amq ab2.amq
# OUT '-' is standard output, IN '-' standard input: both at once
expect_status 0 sh -c "cat b.amq | '$AMQ' merge - a.amq - >ab3.amq"
expect_same_file ab.amq ab3.amq
expect_status 2 sh -c "cat a.amq | '$AMQ' merge ab4.amq - -"
expect_stderr_has "standard input ('-') is given twice: it holds one filter"
[ ! -e ab4.amq ] || fail "a refused merge wrote its OUT"

CASE=export
expect_status 0 "$AMQ" export --to redis k a.amq a.resp
expect_status 0 sh -c "cat a.amq | '$AMQ' export --to redis k - a1.resp"
expect_same_file a.resp a1.resp
"$AMQ" build --guava g.amq keys || fail "build --guava"
expect_status 0 "$AMQ" export --to guava g.amq g.guava
expect_status 0 sh -c "cat g.amq | '$AMQ' export --to guava - g1.guava"
expect_same_file g.guava g1.guava
"$AMQ" create --type partitioned --partitions 4 --capacity 9000 pt.amq || fail "create pt"
"$AMQ" add pt.amq keys || fail "add pt"
expect_status 0 "$AMQ" export --to redis --shards 2 --routing partition pt pt.amq pt.resp
expect_status 0 sh -c "cat pt.amq | '$AMQ' export --to redis --shards 2 --routing partition pt - pt1.resp"
expect_same_file pt.resp pt1.resp
# one file per shard is read twice: standard input cannot be
expect_status 2 sh -c "cat a.amq | '$AMQ' export --to redis --shards 2 s a.amq - s.resp"
expect_stderr_has "export --shards 2: IN_1 is '-', but each shard's file is read twice"
[ ! -e s.resp ] || fail "a refused export wrote its OUT"

CASE=bad-input
expect_status 2 sh -c "'$AMQ' info - </dev/null"
expect_stderr_has "standard input: file is 0 bytes, shorter than the 64-byte header"
expect_status 2 sh -c "head -c 300 a.amq | '$AMQ' info -"
expect_stderr_has "standard input: file is 300 bytes, its header says"
expect_stderr_has "truncated"
# no header: the read stops at once (never reading to the end of an endless stream)
expect_status 2 sh -c "timeout 60 '$AMQ' info - </dev/zero"
expect_stderr_has "standard input: not an amq filter file (bad magic bytes)"
# a filter and more after it: refused, and an endless tail is not read to its end
expect_status 2 sh -c "cat a.amq keys | '$AMQ' info -"
expect_stderr_has "standard input: more bytes follow the filter its header declares"
expect_status 2 sh -c "cat a.amq /dev/zero | timeout 60 '$AMQ' info -"
expect_stderr_has "standard input: more bytes follow the filter its header declares"
expect_status 2 sh -c "'$AMQ' info - <keys"
expect_stderr_has "standard input: not an amq filter file (bad magic bytes)"
# a file named '-' is not read for it
cp a.amq ./-
expect_status 2 sh -c "'$AMQ' info - </dev/null"

finish
