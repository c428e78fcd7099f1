#!/bin/sh
# test_readme.sh - the README's tool block, as written, top to bottom, in a
# temporary directory that holds only the text files it names: every
# command must succeed (sh -e).
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

CASE=readme-tool-block
awk '/^## The tool/ { in_section = 1 }
     in_section && /^```sh$/ { in_block = 1; next }
     in_block && /^```$/ { exit }
     in_block { print }' "$REPO/README.md" >block.sh
[ -s block.sh ] || fail "no sh block under '## The tool' in README.md"
grep -q '^amq ' block.sh || fail "the block runs no amq command"

# The inputs the block names.
seq -f '+1555%07g' 1 200000 >known.txt
seq -f '+1555%07g' 190001 210000 >new.txt
seq -f 'id-%g' 1 5000 >ids.txt
head -n 100 ids.txt >revoked.txt
seq -f 'user%g' 1 30000 | gzip >users.txt.gz
seq -f 'm%g' 1 1000 >monday.txt
seq -f 't%g' 1 1000 >tuesday.txt
{ seq -f 'name%g' 1 3000; seq -f 'name%g' 1 2000; } >names.txt
seq -f 'e%g@example.com' 1 5000 | zstd -q >emails.txt.zst

mkdir bin
ln -s "$AMQ" bin/amq
PATH="$T/bin:$PATH" sh -e block.sh >block.out 2>block.err
st=$?
expect_eq "the README block's exit status (stderr: $(tail -n 3 block.err))" 0 "$st"
# What the comments promise.
grep -q '^248bfa47$' block.out || fail "amq hash --algo murmur3_32 hello is not 248bfa47"
"$AMQ" info ids.amq >ids.info
grep -q '^fingerprint bits: *10$' ids.info || fail "cuckoo --capacity 1M: $(cat ids.info)"
grep -q '^bucket size: *4$' ids.info || fail "cuckoo --capacity 1M: $(cat ids.info)"
size=$(stat -c %s phones.amq)
[ "$size" -gt 5900000 ] && [ "$size" -lt 6100000 ] || fail "phones.amq is $size bytes, not 5.7 MiB"
expect_eq "dedup = awk" "$(awk '!seen[$0]++' names.txt | cmp - unique.txt && echo same)" same
expect_eq "Guava round trip" 5000 "$("$AMQ" query -c emails2.amq emails.txt.zst)"

finish
