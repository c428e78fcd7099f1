#!/bin/sh
# test_safety.sh - issue 19, "lost or damaged work": temporary files removed
# on SIGINT/SIGTERM, --force never replacing a file that is not a filter,
# concurrent adds serialized by a lock, symlinks followed, mode and owner
# kept, hard links and read-only files refused.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

seq 1 20000 >keys
seq 20001 40000 >more

# wait_for_tmp: until a temporary file of the tool exists (at most 10 s).
wait_for_tmp() {
    i=0
    while [ $i -lt 200 ]; do
        ls -a | grep -q "$1" && return 0
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

# Runs a command with SIGINT at its default action: sh starts background
# jobs with SIGINT ignored, and amq keeps an inherited "ignore" (nohup).
sigdfl() {
    exec /usr/bin/python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

for sig in INT TERM; do
    CASE=signal-during-save-$sig
    rm -f f.amq
    "$AMQ" create f.amq --capacity 100000 >/dev/null
    cp f.amq f.orig
    AMQ_TEST_SAVE_DELAY=10 sigdfl "$AMQ" add --rewrite f.amq keys &
    pid=$!
    wait_for_tmp '\.amqtmp$' || fail "no temporary file appeared"
    kill -$sig $pid
    wait $pid
    st=$?
    [ $st -gt 128 ] || fail "add exited $st after SIG$sig, expected death by the signal"
    expect_eq "temporary files left" "" "$(ls -a | grep amqtmp)"
    expect_same_file f.amq f.orig

    CASE=signal-during-dedup-$sig
    rm -f out.txt
    (cat keys; sleep 3) | sigdfl "$AMQ" dedup --approximate -o out.txt &
    pid=$!
    wait_for_tmp '\.out\.txt\..*\.amqtmp$' || fail "no temporary output appeared"
    kill -$sig $pid
    wait $pid
    st=$?
    [ $st -gt 128 ] || fail "dedup exited $st after SIG$sig, expected death by the signal"
    expect_eq "dedup temporary files left" "" "$(ls -a | grep amqtmp)"
    [ ! -e out.txt ] || fail "out.txt exists after the interrupted dedup"
done

CASE=signal-during-create-force
"$AMQ" create g.amq --capacity 1000 >/dev/null
cp g.amq g.orig
AMQ_TEST_SAVE_DELAY=10 sigdfl "$AMQ" create g.amq --capacity 100000 --force &
pid=$!
wait_for_tmp '\.g\.amq\..*\.amqtmp$' || fail "no temporary file appeared"
kill -TERM $pid
wait $pid
st=$?
[ $st -gt 128 ] || fail "create exited $st after SIGTERM, expected death by the signal"
expect_eq "temporary files left" "" "$(ls -a | grep amqtmp)"
expect_same_file g.amq g.orig

CASE=force-only-replaces-filters
seq 1 100 >u.txt
cp u.txt u.orig
"$AMQ" build u.amq keys --quiet
expect_status 2 "$AMQ" build u.txt u.amq --force
expect_same_file u.txt u.orig
expect_status 2 "$AMQ" create u.txt --capacity 10 --force
expect_stderr_has "not an amq filter"
expect_same_file u.txt u.orig
expect_status 2 "$AMQ" merge u.txt u.amq --force
expect_same_file u.txt u.orig
expect_status 2 "$AMQ" import --from guava u.amq u.txt --force
expect_same_file u.txt u.orig
expect_status 2 "$AMQ" dedup u.amq -o u.txt
expect_same_file u.txt u.orig
cp u.amq u.amq.orig
expect_status 2 "$AMQ" dedup u.txt -o u.amq
expect_stderr_has "is an amq filter"
expect_same_file u.amq u.amq.orig
# export --to guava --force replaces a Guava filter, not any binary file (a copy of a
# program was replaced before)
"$AMQ" build --guava gv.amq keys --quiet
head -c 4096 /dev/urandom >bin.dat
cp bin.dat bin.orig
expect_status 2 "$AMQ" export --to guava gv.amq bin.dat --force
expect_stderr_has "exists and is not a Guava filter"
expect_same_file bin.dat bin.orig
expect_status 0 "$AMQ" export --to guava gv.amq gv.bin
expect_status 0 "$AMQ" export --to guava gv.amq gv.bin --force
expect_status 2 "$AMQ" export --to redis k u.amq bin.dat --force
expect_stderr_has "exists and is not a stream of Redis commands"
expect_same_file bin.dat bin.orig
expect_status 0 "$AMQ" export --to redis k u.amq u.resp
expect_status 0 "$AMQ" export --to redis k u.amq u.resp --force
expect_status 0 "$AMQ" create u.amq --capacity 10 --force
expect_status 2 "$AMQ" add u.txt keys
expect_stderr_has "not an amq filter"
expect_same_file u.txt u.orig

CASE=concurrent-adds-serialize
"$AMQ" create c.amq --capacity 100000 >/dev/null
# Each run holds its finished temporary file for a second before the
# rename: without a lock both read the empty filter and one run's keys
# are lost.
AMQ_TEST_SAVE_DELAY=1 AMQ_TEST_JOURNAL_DELAY=1 "$AMQ" add c.amq keys 2>c1.err &
p1=$!
AMQ_TEST_SAVE_DELAY=1 AMQ_TEST_JOURNAL_DELAY=1 "$AMQ" add c.amq more 2>c2.err &
p2=$!
wait_statuses $p1 $p2
expect_eq "both adds succeed" "0 0" "$statuses"
expect_eq "every key of both runs" 40000 "$(cat keys more | "$AMQ" query -c c.amq)"
expect_eq "no temporary file left" "" "$(ls -a | grep amqtmp)"

CASE=symlink-followed
"$AMQ" create real.amq --capacity 100000 >/dev/null
ln -s real.amq link.amq
expect_status 0 "$AMQ" add link.amq keys
[ -L link.amq ] || fail "link.amq is no longer a symlink"
expect_eq "keys in the link's target" 20000 "$("$AMQ" query -c real.amq keys)"
mkdir sub
ln -s ../real.amq sub/rel.amq
expect_status 0 "$AMQ" add sub/rel.amq more
[ -L sub/rel.amq ] || fail "sub/rel.amq is no longer a symlink"
expect_eq "keys through a relative link" 20000 "$("$AMQ" query -c real.amq more)"

CASE=mode-and-owner-kept
"$AMQ" create m.amq --capacity 100000 >/dev/null
chmod 0640 m.amq
expect_status 0 "$AMQ" add m.amq keys
expect_eq "mode" 640 "$(stat -c %a m.amq)"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    chown nobody m.amq
    expect_status 0 "$AMQ" add m.amq more
    expect_eq "owner" nobody "$(stat -c %U m.amq)"
    expect_eq "mode after chown" 640 "$(stat -c %a m.amq)"
fi

CASE=hard-link-refused
"$AMQ" create h.amq --capacity 100000 >/dev/null
ln h.amq h2.amq
cp h.amq h.orig
expect_status 2 "$AMQ" add h.amq keys
expect_stderr_has "hard links"
expect_same_file h.amq h.orig
expect_same_file h2.amq h.orig

CASE=hard-link-refused-by-every-writer
# The same library writer behind create --force, build --force and dedup -o.
"$AMQ" create hl.amq --capacity 1000 >/dev/null
ln hl.amq hl2.amq
cp hl.amq hl.orig
expect_status 2 "$AMQ" create hl.amq --capacity 10 --force
expect_stderr_has "hard links"
expect_status 2 "$AMQ" build hl.amq keys --force --quiet
expect_stderr_has "hard links"
expect_same_file hl.amq hl.orig
seq 1 10 >t1.txt
ln t1.txt t2.txt
expect_status 2 "$AMQ" dedup keys -o t1.txt
expect_stderr_has "hard links"
expect_eq "text kept" 10 "$(wc -l <t1.txt)"
expect_eq "no temporary file left" "" "$(ls -a | grep amqtmp)"

CASE=read-only-refused
"$AMQ" create r.amq --capacity 100000 >/dev/null
chmod 0444 r.amq
cp r.amq r.orig
expect_status 2 "$AMQ" add r.amq keys
expect_stderr_has "read-only"
expect_same_file r.amq r.orig
expect_eq "mode" 444 "$(stat -c %a r.amq)"

CASE=output-names-a-descriptor
# An output of /dev/stdout was followed to /proc/self/fd/1 and the file behind it, and a
# temporary file renamed over that: with '>> log' the log was lost, on a pipe it failed.
printf 'b\na\nb\n' >dd.txt
echo "earlier line" >log.txt
expect_status 0 sh -c "'$AMQ' dedup dd.txt -o /dev/stdout >>log.txt"
expect_eq "dedup -o /dev/stdout >> log appends" "earlier line b a" "$(tr '\n' ' ' <log.txt | sed 's/ $//')"
expect_eq "dedup -o /dev/stdout into a pipe" "b a" "$("$AMQ" dedup dd.txt -o /dev/stdout | tr '\n' ' ' | sed 's/ $//')"
expect_eq "dedup -o /dev/fd/1 into a pipe" "b a" "$("$AMQ" dedup dd.txt -o /dev/fd/1 | tr '\n' ' ' | sed 's/ $//')"
echo "earlier line" >log2.txt
expect_status 0 sh -c "'$AMQ' create /dev/stdout --capacity 100 >>log2.txt"
expect_eq "create /dev/stdout >> log keeps the log" "earlier line" "$(head -n 1 log2.txt)"
"$AMQ" create ref.amq --capacity 100 >/dev/null
expect_eq "... and appends the filter" "$(( $(wc -c <ref.amq) + 13 ))" "$(wc -c <log2.txt)"
expect_status 0 sh -c "'$AMQ' build /dev/fd/3 keys 3>fd3.amq"
expect_eq "build /dev/fd/3: the filter in the file on descriptor 3" 20000 "$("$AMQ" query -c fd3.amq keys)"
ln -s /dev/stdout to-stdout
expect_status 0 sh -c "'$AMQ' merge to-stdout fd3.amq fd3.amq >merged.amq"
expect_eq "merge to a symlink to /dev/stdout" 20000 "$("$AMQ" query -c merged.amq keys)"
[ -L to-stdout ] || fail "the symlink to /dev/stdout was replaced"
expect_status 2 "$AMQ" create /dev/fd/9 --capacity 100
expect_stderr_has "/dev/fd/9: names descriptor 9"
expect_eq "no temporary file left" "" "$(ls -a | grep amqtmp)"

finish
