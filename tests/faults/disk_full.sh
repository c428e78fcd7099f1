#!/bin/sh
# disk_full.sh - a save that runs out of space: `amq add`, `amq create` and
# `amq create --force` must fail with exit status 2 and a message saying
# why, leave the old file byte for byte as it was, and leave no temporary
# file behind (an in-place add, which needs room only for its journal,
# succeeds where a whole-file save cannot, and fails cleanly with no room at
# all).  Two ways to run out:
#  - a 1 MiB tmpfs holding a 600 kB filter (the new file does not fit next
#    to the old one) - needs root and mount(2); skipped with a note if not;
#  - RLIMIT_FSIZE (ulimit -f) below the filter's size - works for anyone
#    (the tool ignores SIGXFSZ, so the write fails with EFBIG instead of
#    killing it).
. "$(dirname "$0")/../cli/lib.sh"
cd "$T" || exit 1

seq 1 5000 >keys
"$AMQ" create big.amq --capacity 500k --fpp 0.01 >/dev/null || exit 1
"$AMQ" add big.amq keys || exit 1
size=$(wc -c <big.amq)
[ "$size" -gt 524288 ] && [ "$size" -lt 786432 ] || fail "the test filter is $size bytes"
seq 5001 6000 >more

# no_temporaries DIR
no_temporaries() {
    checks=$((checks + 1))
    ls -a "$1" | grep -q 'amqtmp$' && fail "a temporary file was left in $1: $(ls -a "$1")"
}

# full_disk_checks DIR CMD_PREFIX... : the three commands fail cleanly in DIR.
full_disk_checks() {
    d=$1
    shift
    cp big.amq before.amq
    expect_status 2 "$@" "$AMQ" add $ADD_OPTS "$d/f.amq" more
    expect_stderr_has "$d/f.amq"
    expect_stderr_has "$WHY"
    expect_same_file before.amq "$d/f.amq"
    no_temporaries "$d"
    expect_status 2 "$@" "$AMQ" create "$d/f.amq" --capacity 400k --force
    expect_stderr_has "$WHY"
    expect_same_file before.amq "$d/f.amq"
    no_temporaries "$d"
    expect_status 2 "$@" "$AMQ" create "$d/g.amq" --capacity 500k
    expect_stderr_has "$WHY"
    checks=$((checks + 1))
    [ -e "$d/g.amq" ] && fail "a failed create left $d/g.amq"
    no_temporaries "$d"
    # The old file still works.
    expect_status 0 "$AMQ" info "$d/f.amq"
    expect_eq "keys still found" 5000 "$("$AMQ" query -c "$d/f.amq" keys)"
}

CASE=tmpfs
mkdir mnt
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=1m amq-test "$T/mnt" 2>/dev/null; then
    trap 'umount "$T/mnt" 2>/dev/null; rm -rf "$T"' EXIT
    cp big.amq mnt/f.amq
    WHY="No space left on device"
    # A whole-file save does not fit beside the old file...
    ADD_OPTS=--rewrite full_disk_checks mnt
    # ...an in-place add needs only its journal: it fits, and adds.
    expect_status 0 "$AMQ" add mnt/f.amq more
    expect_eq "in place on a nearly full disk" 6000 "$(cat keys more | "$AMQ" query -c mnt/f.amq)"
    expect_status 0 "$AMQ" info mnt/f.amq
    # With no room for the journal either, it fails and changes nothing.
    cp mnt/f.amq before.amq
    dd if=/dev/zero of=mnt/fill bs=4k 2>/dev/null
    seq 6001 7000 >more2
    expect_status 2 "$AMQ" add mnt/f.amq more2
    expect_stderr_has "$WHY"
    expect_same_file before.amq mnt/f.amq
    checks=$((checks + 1))
    ls -a mnt | grep -q 'amqjournal' && fail "a journal was left: $(ls -a mnt)"
    rm -f mnt/fill
    umount "$T/mnt"
else
    echo "$0: note: cannot mount a tmpfs (not root?): only the RLIMIT_FSIZE case runs"
fi

CASE=rlimit-fsize
mkdir lim
cp big.amq lim/f.amq
WHY="File too large"
# 256 blocks (of 512 or 1024 bytes): far below the filter's size.
# An in-place add would fail writing past the limit after its journal: it
# saves whole instead, and fails cleanly.
ADD_OPTS= full_disk_checks lim sh -c 'ulimit -f 256 && exec "$@"' sh

finish
