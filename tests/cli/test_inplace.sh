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

CASE=signal-during-commit
# Issue 45: a caught signal (Ctrl-C, kill, hangup) during the commit of an
# in-place add leaves no journal: the commit finishes, then the tool dies of
# the signal.  Started from Python with the signals' default action (a shell
# starts background jobs with SIGINT ignored).
"$AMQ" create sg.amq --capacity 10M >/dev/null
"$AMQ" add sg.amq k1
n=0
for sig in INT TERM HUP; do
    n=$((n + 1))
    seq $((n * 100000)) $((n * 100000 + 999)) >ks$n
    AMQ_TEST_JOURNAL_DELAY=1 /usr/bin/python3 - "$AMQ" sg.amq ks$n $sig <<'PY' >sig.out 2>&1 ||
import os, signal, subprocess, sys, time
amq, f, keys, sig = sys.argv[1:5]
def default_signals():
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)
p = subprocess.Popen([amq, "add", f, keys], preexec_fn=default_signals)
j = os.path.join(os.path.dirname(f) or ".", "." + os.path.basename(f) + ".amqjournal")
for _ in range(400):
    if os.path.exists(j) and os.path.getsize(j) > 0:
        break
    time.sleep(0.01)
else:
    sys.exit("no journal appeared")
p.send_signal(getattr(signal, "SIG" + sig))
rc = p.wait(timeout=60)
print("exit", rc)
sys.exit(0 if rc == -getattr(signal, "SIG" + sig) else "amq add did not die of SIG%s: %d" % (sig, rc))
PY
        fail "SIG$sig: $(cat sig.out)"
    expect_eq "SIG$sig: no journal left" "" "$(ls -a | grep amqjournal)"
    expect_status 0 "$AMQ" info sg.amq
    expect_eq "SIG$sig: the commit finished: its keys are in" 1000 "$("$AMQ" query -c sg.amq ks$n)"
    expect_eq "SIG$sig: earlier keys" 1000 "$("$AMQ" query -c sg.amq k1)"
done
# At random moments of larger adds: no journal, a valid file that is the old
# filter or the new one, no earlier key lost.
seq 1000000 1299999 >big
/usr/bin/python3 - "$AMQ" sg.amq big <<'PY' >rnd.out 2>&1 || fail "random SIGINTs: $(cat rnd.out)"
import filecmp, os, random, shutil, signal, subprocess, sys, time
amq, f, keys = sys.argv[1:4]
rnd = random.Random(45)
def default_signals():
    signal.signal(signal.SIGINT, signal.SIG_DFL)
# kill moments uniform over 1.5 times an undisturbed add (on a copy)
shutil.copy(f, f + ".probe")
t0 = time.monotonic()
subprocess.run([amq, "add", "-q", f + ".probe", keys], check=True)
span = 1.5 * (time.monotonic() - t0)
for i in range(12):
    shutil.copy(f, f + ".old")
    p = subprocess.Popen([amq, "add", "-q", f, keys], preexec_fn=default_signals,
                         stderr=subprocess.DEVNULL)
    time.sleep(rnd.uniform(0, span))
    p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=60)
    left = [x for x in os.listdir(os.path.dirname(f) or ".") if x.endswith("amqjournal")]
    if left:
        sys.exit("run %d: journal left after SIGINT: %s" % (i, left))
    if subprocess.run([amq, "info", f], capture_output=True).returncode != 0:
        sys.exit("run %d: the file does not validate" % i)
    if rc == 0 or not filecmp.cmp(f, f + ".old", shallow=False):
        q = subprocess.run([amq, "query", "-c", f, keys], capture_output=True)
        if q.stdout.strip() != b"300000":
            sys.exit("run %d: a changed file lacks keys of the add: %r" % (i, q.stdout))
print("ok")
PY
expect_eq "earlier keys after the random SIGINTs" 1000 "$("$AMQ" query -c sg.amq k1)"

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

CASE=reader-waits-for-the-writer
# A checksum off while another process holds the file's lock (an add in place writing it) is
# its writes, not damage: query and info wait for the lock and read again.  Before, a query
# racing an in-place add failed now and then with "payload checksum mismatch ... corrupt".
"$AMQ" create w.amq --capacity 10M >/dev/null
"$AMQ" add w.amq k1
cp w.amq w.good
size=$(wc -c <w.amq)
printf 'X' | dd of=w.amq bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
expect_status 2 "$AMQ" query -c w.amq k1
expect_stderr_has "checksum"
flock -x w.amq sh -c 'sleep 1; cat w.good >w.amq' &
pid=$!
sleep 0.3
expect_eq "keys, read once the writer is done" 1000 "$("$AMQ" query -c w.amq k1)"
wait $pid
printf 'X' | dd of=w.amq bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
flock -x w.amq sh -c 'sleep 1; cat w.good >w.amq' &
pid=$!
sleep 0.3
expect_status 0 "$AMQ" info w.amq
wait $pid

CASE=writer-reading-its-own-file
# add holds its file's lock while it reads it; the second read of a checksum off (under a
# shared lock, to wait for a writer) waited on that lock forever: a corrupt file hung add.
"$AMQ" create own.amq --type cuckoo --capacity 1000 >/dev/null
"$AMQ" add own.amq k1
printf 'XXXX' | dd of=own.amq bs=1 seek=200 conv=notrunc 2>/dev/null
expect_status 2 timeout 20 "$AMQ" add own.amq --rewrite k2
expect_stderr_has "checksum"
"$AMQ" create own2.amq --capacity 10M >/dev/null
"$AMQ" add own2.amq k1
size=$(wc -c <own2.amq)
printf 'X' | dd of=own2.amq bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
expect_status 2 timeout 20 "$AMQ" add own2.amq --rewrite k2
expect_stderr_has "checksum"

finish
