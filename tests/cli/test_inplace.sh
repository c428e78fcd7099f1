#!/bin/sh
# test_inplace.sh - issue 19, incremental adds: a Bloom or blocked Bloom
# filter saved with chunked checksums is updated in place (same inode, only
# the changed chunks written, through a journal); a SIGKILL while the
# journal is the only complete copy leaves a file every open reads right
# (the journal applied), the next writer completes it, a torn journal is
# ignored, and every earlier key stays.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

seq -f 'a%g' 1 1000 >k1
seq -f 'b%g' 1 1000 >k2
seq -f 'c%g' 1 1000 >k3

CASE=in-place-same-inode
for type in bloom blocked; do
    rm -f f.amq g.amq
    "$AMQ" create f.amq --type $type --capacity 10M >/dev/null
    ino=$(stat -c %i f.amq)
    expect_status 0 "$AMQ" add f.amq k1
    expect_eq "$type: inode after add" "$ino" "$(stat -c %i f.amq)"
    expect_status 0 "$AMQ" add f.amq k2
    expect_eq "$type: keys" 2000 "$(cat k1 k2 | "$AMQ" query -c f.amq)"
    expect_status 0 "$AMQ" info f.amq
    expect_eq "$type: no journal or temporary left" "" "$(ls -a | grep 'amqjournal\|amqtmp')"
    # --rewrite replaces the file: the same filter, byte for byte.
    cp f.amq inplace.amq
    "$AMQ" create g.amq --type $type --capacity 10M >/dev/null
    "$AMQ" add --rewrite g.amq k1
    "$AMQ" add --rewrite g.amq k2
    expect_same_file g.amq inplace.amq
done

CASE=old-file-rewritten-once
"$AMQ" build o.amq k1 --capacity 100k --quiet
ino=$(stat -c %i o.amq)
expect_status 0 "$AMQ" add o.amq k2
[ "$(stat -c %i o.amq)" != "$ino" ] || fail "a file without chunked checksums was not rewritten"
ino=$(stat -c %i o.amq)
expect_status 0 "$AMQ" add o.amq k3
expect_eq "the second add is in place" "$ino" "$(stat -c %i o.amq)"
expect_eq "keys" 3000 "$(cat k1 k2 k3 | "$AMQ" query -c o.amq)"

CASE=kill-during-commit
"$AMQ" create k.amq --capacity 10M >/dev/null
"$AMQ" add k.amq k1
AMQ_TEST_JOURNAL_DELAY=10 "$AMQ" add k.amq k2 &
pid=$!
i=0
while [ ! -s .k.amq.amqjournal ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -e .k.amq.amqjournal ] || fail "no journal appeared"
sleep 1 # the journal is complete and fsync'd long before the 10 s delay ends
kill -KILL $pid
wait $pid 2>/dev/null
# The journal is complete and the file not yet written: readers apply it.
expect_status 0 "$AMQ" info k.amq
expect_eq "earlier keys after the kill" 1000 "$("$AMQ" query -c k.amq k1)"
expect_eq "the journal's keys after the kill" 1000 "$("$AMQ" query -c k.amq k2)"
# A file half written from the journal (as a kill while applying it
# leaves): the first half of the records written into the file in place.
/usr/bin/python3 - <<'PY' || fail "cannot half-apply the journal"
import struct
j = open('.k.amq.amqjournal', 'rb').read()
n = struct.unpack_from('<Q', j, 16)[0]
pos = 40
with open('k.amq', 'r+b') as f:
    for i in range(n // 2):
        off, ln = struct.unpack_from('<QI', j, pos)
        f.seek(off)
        f.write(j[pos + 16:pos + 16 + ln])
        pos += 16 + ln
PY
expect_status 0 "$AMQ" info k.amq
expect_eq "earlier keys, file half written" 1000 "$("$AMQ" query -c k.amq k1)"
expect_eq "the journal's keys, file half written" 1000 "$("$AMQ" query -c k.amq k2)"
expect_status 0 "$AMQ" add k.amq k3
expect_eq "journal gone after the next add" "" "$(ls -a | grep amqjournal)"
expect_eq "every key" 3000 "$(cat k1 k2 k3 | "$AMQ" query -c k.amq)"
expect_status 0 "$AMQ" info k.amq

CASE=torn-journal-ignored
"$AMQ" create t.amq --capacity 10M >/dev/null
"$AMQ" add t.amq k1
cp t.amq t.orig
printf 'AMQJRNL1 torn' >.t.amq.amqjournal
expect_status 0 "$AMQ" info t.amq
expect_eq "keys" 1000 "$("$AMQ" query -c t.amq k1)"
expect_status 0 "$AMQ" add t.amq k2
expect_eq "torn journal removed by the writer" "" "$(ls -a | grep amqjournal)"

CASE=stale-journal-never-meets-a-new-file
"$AMQ" create s.amq --capacity 10M >/dev/null
"$AMQ" add s.amq k1
AMQ_TEST_JOURNAL_DELAY=10 "$AMQ" add s.amq k2 &
pid=$!
i=0
while [ ! -s .s.amq.amqjournal ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
sleep 1
kill -KILL $pid
wait $pid 2>/dev/null
# A file of the same size put there by another tool: the journal (bound to
# the old inode) is not applied to it.
"$AMQ" create s2.amq --capacity 10M >/dev/null
cp s2.amq s.new && mv s.new s.amq
expect_status 0 "$AMQ" info s.amq
expect_eq "a replaced file answers as itself" 0 "$("$AMQ" query -c s.amq k1)"

finish
