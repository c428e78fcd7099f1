#!/bin/sh
# test_build.sh - amq build, merge, import and export: sizing from the
# distinct keys, round trips, gzip and pipes, and the refusals.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$T" || exit 1

has_kind() { "$AMQ" create "k-$1.amq" --type "$1" --capacity 10 --force >/dev/null 2>&1; }

seq 1 20000 >keys
seq 1 20000 >>keys          # every key twice: 20,000 distinct
seq 20001 60000 >absent

CASE=build-exact-count
expect_status 0 "$AMQ" build b.amq keys --stats
expect_stderr_has "distinct keys:    20000 (counted exactly)"
expect_eq "capacity = distinct keys" 20000 \
    "$("$AMQ" info --json b.amq | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["capacity"])')"
expect_eq "every key in" 40000 "$("$AMQ" query -c b.amq keys)"
fp=$("$AMQ" query -c b.amq absent)
[ "$fp" -gt 250 ] && [ "$fp" -lt 560 ] || fail "false positives $fp not near 1% of 40000"
# the same filter from a pipe (copied aside) and from gzip
cat keys | "$AMQ" build p.amq
expect_eq "from a pipe" "$("$AMQ" info --json b.amq | grep -o '"bits": [0-9]*')" \
    "$("$AMQ" info --json p.amq | grep -o '"bits": [0-9]*')"
gzip -c keys >keys.gz
"$AMQ" build z.amq keys.gz
expect_eq "from gzip: same answers" "$fp" "$("$AMQ" query -c z.amq absent)"
cat keys.gz | "$AMQ" build zp.amq
expect_eq "from piped gzip: same answers" "$fp" "$("$AMQ" query -c zp.amq absent)"
# the count ignores a trailing CR, as keys do
sed 's/$/\r/' keys >keys-crlf
"$AMQ" build --stats c.amq keys keys-crlf 2>stats.txt
grep -q "20000 (counted exactly)" stats.txt || fail "CRLF keys counted apart: $(cat stats.txt)"
# one thread or several: the same bits (the item count, keys that set a new
# bit, may depend on the order of the batches)
"$AMQ" build --threads 1 t1.amq keys
"$AMQ" build --threads 3 t3.amq keys
expect_eq "same bits with 1 and 3 threads" \
    "$("$AMQ" info --json t1.amq | grep -o '"bits_set": [0-9]*')" \
    "$("$AMQ" info --json t3.amq | grep -o '"bits_set": [0-9]*')"
cmp -s t1.amq t3.amq || [ "$("$AMQ" query -c t3.amq absent)" = "$fp" ] || fail "3 threads: other answers"


CASE=build-hyperloglog
/usr/bin/python3 -c '
for i in range(1500000): print(f"k{i * 7919 % 10000019}")' >many
"$AMQ" build --stats h.amq many 2>stats.txt
est=$(sed -n 's/^distinct keys: *about \([0-9]*\).*/\1/p' stats.txt)
cap=$(sed -n 's/^capacity: *\([0-9]*\)$/\1/p' stats.txt)
/usr/bin/python3 -c "
import sys
est, cap, n = $est, $cap, 1.5e6
# HyperLogLog with 2^16 registers: 0.41 % standard error; the capacity adds 3 of them
sys.exit(0 if abs(est - n) < n * 0.0164 and cap >= n and cap < n * 1.03 else 1)
" || fail "HyperLogLog estimate $est, capacity $cap for 1,500,000 keys"
expect_eq "every key in" 1500000 "$("$AMQ" query -c h.amq many)"

CASE=build-capacity-one-pass
cat keys | "$AMQ" build o.amq --capacity 30000 --fpp 0.001
expect_eq "given capacity" 30000 \
    "$("$AMQ" info --json o.amq | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["capacity"])')"
expect_eq "every key in" 40000 "$("$AMQ" query -c o.amq keys)"

CASE=build-capacity-overfill
# build --capacity below the keys wrote a saturated filter (every absent key present), exit
# 0, no word, while add refuses as much without --allow-overfill: build does as add does.
expect_status 2 "$AMQ" build over.amq keys --capacity 1000
expect_stderr_has "over its capacity of 1000"
expect_stderr_has "from 40000 lines read"
expect_stderr_has "--allow-overfill"
[ -e over.amq ] && fail "a refused build wrote its file"
expect_status 0 "$AMQ" build over.amq keys --capacity 1000 --allow-overfill
expect_stderr_has "over its capacity of 1000"
expect_eq "overfilled: every key still in" 40000 "$("$AMQ" query -c over.amq keys)"
expect_status 0 "$AMQ" build over-q.amq keys --capacity 1000 --allow-overfill --quiet
expect_eq "--quiet: no warning" "" "$(cat "$T/.err")"
expect_status 0 "$AMQ" build fits.amq keys --capacity 20000
# --stats with --capacity said keys_read 0 and distinct_keys 0: the one pass counts them
"$AMQ" build cs.amq keys --capacity 30000 --stats --json 2>cs.json
expect_eq "keys read and distinct keys with --capacity" "40000 20000 true" \
    "$(/usr/bin/python3 -c 'import json,sys; j = json.load(open("cs.json")); print(j["keys_read"], j["distinct_keys"], str(j["counted_exactly"]).lower())')"

CASE=build-kinds
for kind in blocked cuckoo partitioned; do
    if has_kind "$kind"; then
        expect_status 0 "$AMQ" build "$kind.amq" keys --type "$kind"
        expect_eq "$kind: every key in" 40000 "$("$AMQ" query -c "$kind.amq" keys)"
        expect_eq "$kind kind" "$kind" "$("$AMQ" info --json "$kind.amq" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["kind"])')"
        fpk=$("$AMQ" query -c "$kind.amq" absent)
        [ "$fpk" -lt 700 ] || fail "$kind: $fpk false positives of 40000 at 1%"
    else
        echo "  (kind $kind not built in: skipped)"
    fi
done
for kind in blocked partitioned; do
    if has_kind "$kind"; then
        # several threads adding at once (the kind's concurrent mode) lose no bit
        cat many many >many2
        expect_status 0 "$AMQ" build "$kind-t1.amq" many2 --type "$kind" --threads 1
        expect_status 0 "$AMQ" build "$kind-t4.amq" many2 --type "$kind" --threads 4
        expect_eq "$kind, 4 threads: every key in" 1500000 "$("$AMQ" query -c "$kind-t4.amq" many)"
        expect_eq "$kind: 1 and 4 threads answer alike" "$("$AMQ" query -c "$kind-t1.amq" absent)" \
            "$("$AMQ" query -c "$kind-t4.amq" absent)"
    fi
done
if has_kind cuckoo; then
    # each distinct key stored exactly once (duplicates do not fill the table,
    # false positives are not left out), so each can be removed once
    expect_eq "cuckoo items = distinct keys" 20000 \
        "$("$AMQ" info --json cuckoo.amq | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["items"])')"
    seq 1 20000 >distinct-keys
    expect_status 0 "$AMQ" remove cuckoo.amq distinct-keys
    expect_eq "empty after removing every key once" 0 \
        "$("$AMQ" info --json cuckoo.amq | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["items"])')"
fi

CASE=build-errors
expect_status 2 "$AMQ" build b.amq keys
expect_stderr_has "file exists (use --force"
expect_status 0 "$AMQ" build b.amq keys --force
expect_status 2 "$AMQ" build x.amq keys --type nosuch
expect_stderr_has "unknown --type 'nosuch'"
expect_status 2 "$AMQ" build x.amq keys --guava --hash murmur3
expect_stderr_has "--guava"
expect_status 2 "$AMQ" build x.amq no-such-input
expect_stderr_has "no-such-input"
[ -e x.amq ] && fail "a failed build left a file"
expect_status 2 "$AMQ" build x.amq keys --fpp 2
expect_status 2 "$AMQ" build x.amq keys --capacity 0
expect_status 2 "$AMQ" build
expect_stderr_has "missing FILE"
head -c 1000 keys.gz >trunc.gz
expect_status 2 "$AMQ" build x.amq trunc.gz
expect_stderr_has "truncated gzip data"

CASE=merge
sed -n '1,10000p' keys >half1
sed -n '10001,20000p' keys >half2
"$AMQ" build m1.amq half1 --capacity 20000
"$AMQ" build m2.amq half2 --capacity 20000
"$AMQ" build mall.amq half1 half2 --capacity 20000
expect_status 0 "$AMQ" merge m.amq m1.amq m2.amq
expect_eq "merged: every key" 40000 "$("$AMQ" query -c m.amq keys)"
expect_eq "merged = built from both" "$("$AMQ" query -c mall.amq absent)" "$("$AMQ" query -c m.amq absent)"
expect_eq "merged bits = built bits" \
    "$("$AMQ" info --json mall.amq | grep -o '"bits_set": [0-9]*')" \
    "$("$AMQ" info --json m.amq | grep -o '"bits_set": [0-9]*')"
expect_status 2 "$AMQ" merge m.amq m1.amq m2.amq
expect_stderr_has "file exists (use --force"
expect_status 0 "$AMQ" merge --force m1.amq m1.amq m2.amq
expect_eq "merged in place" 40000 "$("$AMQ" query -c m1.amq keys)"
"$AMQ" build small.amq half1 --capacity 1000 --allow-overfill --quiet
expect_status 2 "$AMQ" merge bad.amq m2.amq small.amq
expect_stderr_has "different numbers of bits"
[ -e bad.amq ] && fail "a failed merge left a file"
"$AMQ" build seeded.amq half1 --capacity 20000 --seed 7
expect_status 2 "$AMQ" merge bad.amq m2.amq seeded.amq
expect_stderr_has "hashed differently"
if has_kind blocked; then
    "$AMQ" build bl.amq half1 --capacity 20000 --type blocked
    expect_status 2 "$AMQ" merge bad.amq m2.amq bl.amq
    expect_stderr_has "cannot merge a bloom filter with a blocked filter"
fi
printf 'junk' >junk.amq
expect_status 2 "$AMQ" merge bad.amq m2.amq junk.amq
expect_stderr_has "junk.amq"
expect_status 2 "$AMQ" merge bad.amq m2.amq missing.amq
expect_stderr_has "missing.amq"
expect_status 2 "$AMQ" merge only-out.amq
expect_stderr_has "missing IN"

CASE=merge-locks-out-before-reading
# merge OUT OUT IN --force read OUT, then locked it only to save: an add to OUT in between
# exited 0 and its keys were gone.  IN here is a FIFO, so the merge sits between reading OUT
# and its save until the test writes IN: the add must wait for the merge, and keep its keys.
"$AMQ" create race.amq --capacity 100000 >/dev/null
cp race.amq race-in.amq
mkfifo race.fifo
"$AMQ" merge race.amq race.amq race.fifo --force 2>race-merge.err &
mpid=$!
sleep 0.5
"$AMQ" add race.amq half1 2>race-add.err &
apid=$!
sleep 0.5
cat race-in.amq >race.fifo
wait_statuses $mpid $apid
expect_eq "merge and add succeed" "0 0" "$statuses"
expect_eq "every key of the add, after the merge" 10000 "$("$AMQ" query -c race.amq half1)"
grep -q "race.amq: waiting for another amq writing it" race-add.err ||
    fail "the add did not wait for the merge: $(cat race-add.err)"
# the same with add -q ("no progress, no warnings"): it waits as long, and says nothing
mkfifo race2.fifo
"$AMQ" merge race.amq race.amq race2.fifo --force 2>race-merge2.err &
mpid=$!
sleep 0.5
"$AMQ" add -q race.amq half2 2>race-addq.err &
apid=$!
sleep 0.5
cat race-in.amq >race2.fifo
wait_statuses $mpid $apid
expect_eq "merge and add -q succeed" "0 0" "$statuses"
expect_eq "every key of the add -q, after the merge" 10000 "$("$AMQ" query -c race.amq half2)"
[ ! -s race-addq.err ] || fail "add -q warned: $(cat race-addq.err)"

CASE=merge-overlap
# Issue 45: a union counts a key of both sides once.  A filter merged with
# itself keeps its count; two overlapping halves count their distinct keys
# (an estimate from the bits); neither warns about a capacity it is within.
items_of() { "$AMQ" info --json "$1" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["items"])'; }
seq 1 600000 >k600
seq 300001 900000 >k600b
for kind in bloom blocked partitioned; do
    has_kind $kind || continue
    rm -f o1.amq o2.amq oo.amq ou.amq
    "$AMQ" create o1.amq --type $kind --capacity 1M >/dev/null
    "$AMQ" add o1.amq k600
    "$AMQ" create o2.amq --type $kind --capacity 1M >/dev/null
    "$AMQ" add o2.amq k600b
    n1=$(items_of o1.amq)
    expect_status 0 "$AMQ" merge oo.amq o1.amq o1.amq
    expect_eq "$kind: merge prints nothing" "" "$(cat "$T/.err")"
    expect_eq "$kind: a filter merged with itself keeps its count" "$n1" "$(items_of oo.amq)"
    expect_status 0 "$AMQ" info oo.amq
    expect_eq "$kind: info of the self-merge does not warn" "" "$(cat "$T/.err")"
    expect_status 0 "$AMQ" merge ou.amq o1.amq o2.amq
    n=$(items_of ou.amq)
    [ "$n" -ge 891000 ] && [ "$n" -le 909000 ] ||
        fail "$kind: union of 600k and 600k keys sharing 300k counts $n (900000 +- 1 %)"
    expect_status 0 "$AMQ" info ou.amq
    expect_eq "$kind: info of the union does not warn" "" "$(cat "$T/.err")"
    expect_eq "$kind: every key of the union present" 1200000 \
        "$(cat k600 k600b | "$AMQ" query -c ou.amq)"
done

CASE=guava-round-trip
# Without Java: amq's own Guava files round-trip byte for byte.
expect_status 0 "$AMQ" build g.amq keys --guava
expect_status 0 "$AMQ" export --to guava g.amq g.bin
expect_status 0 "$AMQ" import --from guava g.bin gi.amq
expect_eq "imported answers as built" "$("$AMQ" query -c g.amq absent)" "$("$AMQ" query -c gi.amq absent)"
expect_status 0 "$AMQ" export --to guava gi.amq g2.bin
expect_same_file g.bin g2.bin
"$AMQ" export --to guava g.amq - >g3.bin
expect_same_file g.bin g3.bin
"$AMQ" import --from guava - gs.amq <g.bin
expect_eq "import from stdin" 40000 "$("$AMQ" query -c gs.amq keys)"
# the issue's sizing vector
: >none
"$AMQ" build e.amq none --guava --capacity 1000000 --fpp 0.01
"$AMQ" export --to guava e.amq e.bin
expect_eq "Guava file size" 1198142 "$(wc -c <e.bin | tr -d ' ')"
expect_eq "Guava file head" "010700024907" "$(od -An -tx1 -N6 e.bin | tr -d ' \n')"
"$AMQ" import --from guava e.bin ec.amq --capacity 1000000 --fpp 0.01
"$AMQ" info ec.amq >info.txt
grep -q "^probe: *guava$" info.txt || fail "imported probe scheme: $(cat info.txt)"
grep -q "^capacity: *1000000 items$" info.txt || fail "recorded capacity: $(cat info.txt)"
grep -q "^bits: *9585088$" info.txt || fail "imported bits: $(cat info.txt)"

CASE=guava-errors
head -c 100 g.bin >trunc.bin
expect_status 2 "$AMQ" import --from guava trunc.bin x.amq
expect_stderr_has "trunc.bin: truncated Guava filter"
(printf '\000'; tail -c +2 g.bin) >mitz32.bin
expect_status 2 "$AMQ" import --from guava mitz32.bin x.amq
expect_stderr_has "MURMUR128_MITZ_32"
(cat g.bin; printf 'x') >long.bin
expect_status 2 "$AMQ" import --from guava long.bin x.amq
expect_stderr_has "after its last data word"
printf '' >empty.bin
expect_status 2 "$AMQ" import --from guava empty.bin x.amq
expect_stderr_has "truncated"
[ -e x.amq ] && fail "a failed import left a file"
expect_status 2 "$AMQ" import --from parquet g.bin x.amq
expect_stderr_has "unknown format 'parquet'"
expect_status 2 "$AMQ" import --from redis g.bin x.amq
expect_stderr_has "RESP"
[ -e x.amq ] && fail "a failed import left a file"
expect_status 2 "$AMQ" export --to redis k g.bin
expect_stderr_has "g.bin"
expect_status 2 "$AMQ" import g.bin x.amq
expect_stderr_has "--from FORMAT is required (guava, redis)"
expect_status 2 "$AMQ" import --from guava g.bin gi.amq
expect_stderr_has "file exists"
expect_status 2 "$AMQ" export --to guava b.amq x.bin
expect_stderr_has "native probe scheme"
[ -e x.bin ] && fail "a failed export left a file"
expect_status 2 "$AMQ" export --to guava g.amq g.bin
expect_stderr_has "file exists"
if has_kind blocked; then
    expect_status 2 "$AMQ" export --to guava blocked.amq x.bin
    expect_stderr_has "a blocked filter cannot be written in Guava's format"
fi
expect_status 2 "$AMQ" export --to guava junk.amq x.bin
expect_stderr_has "junk.amq"

CASE=import-redis-chunks
# Issue 45: a chunk's iterator names where it lies in the filter; a dump's
# chunks tile it in order.  A repeated chunk in place of another of the same
# length (the byte total holds), chunks out of order, and a Cuckoo chunk with
# a fingerprint the header does not count are refused, and no file written.
CHUNKS="/usr/bin/python3 $HERE/resp_chunks.py"
seq 1 300000 >k300
"$AMQ" create rb.amq --type scalable-bloom --redisbloom --capacity 3M --fpp 0.001 >/dev/null
"$AMQ" add rb.amq k300
"$AMQ" create rc.amq --type scalable-cuckoo --redisbloom --capacity 3M >/dev/null
"$AMQ" add rc.amq k300
for fam in rb rc; do
    "$AMQ" export --to redis k $fam.amq $fam.resp
    expect_eq "$fam: data chunks of 1 MiB" yes "$([ "$($CHUNKS $fam.resp count)" -ge 4 ] && echo yes)"
    expect_status 0 "$AMQ" import --from redis $fam.resp $fam-back.amq
    expect_eq "$fam: the whole stream imports every key" 300000 "$("$AMQ" query -c $fam-back.amq k300)"
    $CHUNKS $fam.resp $fam-rep.resp repeat 0 1
    expect_status 2 "$AMQ" import --from redis $fam-rep.resp x.amq
    expect_stderr_has "a chunk repeated"
    [ -e x.amq ] && fail "$fam: a stream with a repeated chunk left a file"
    $CHUNKS $fam.resp $fam-rep2.resp repeat 2 1
    expect_status 2 "$AMQ" import --from redis $fam-rep2.resp x.amq
    expect_stderr_has "a chunk missing"
    [ -e x.amq ] && fail "$fam: a stream with a chunk missing left a file"
    $CHUNKS $fam.resp $fam-swap.resp swap 0 2
    expect_status 2 "$AMQ" import --from redis $fam-swap.resp x.amq
    expect_stderr_has "out of order"
    [ -e x.amq ] && fail "$fam: a stream out of order left a file"
done
$CHUNKS rc.resp rc-fill.resp fill 0
expect_status 2 "$AMQ" import --from redis rc-fill.resp x.amq
expect_stderr_has "the header records 300000 items but the chunks hold another number"
[ -e x.amq ] && fail "a Cuckoo stream whose count is not its fingerprints' left a file"

CASE=usage
for c in build merge import export dedup; do
    expect_status 0 "$AMQ" "$c" --help
    expect_status 0 "$AMQ" help "$c"
    expect_status 2 "$AMQ" "$c" --no-such-option
done

CASE=import-quoted-dump
# redis-cli prints a DUMP quoted unless --raw (the help said "--no-raw DUMP ... unquoted",
# which failed as "RESP line too long"): the error says what it is and what to run.
printf '"\\x07\\x81\\x12abc"\n' >quoted.dump
expect_status 2 "$AMQ" import --from redis quoted.dump quoted.amq
expect_stderr_has "a quoted string, not a RESP stream or a DUMP payload"
expect_stderr_has "'redis-cli --raw DUMP KEY > FILE'"
[ ! -e quoted.amq ] || fail "a refused import wrote quoted.amq"
"$AMQ" import --from redis --help | tr '\n' ' ' | grep -q "redis-cli --raw DUMP KEY > IN" ||
    fail "import --help does not recommend redis-cli --raw DUMP"

finish
