#!/bin/sh
# test_expandable.sh - expandable filters through the tool: create without
# --capacity, add grows the file, info shows the expansions and each
# generation's rate, every key stays present, refusals.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

info_field() { "$AMQ" info "$1" | sed -n "s/^$2: *//p"; }

CASE=expandable-grows
expect_status 0 "$AMQ" create e.amq --type expandable
expect_eq "kind" expandable "$(info_field e.amq kind)"
expect_eq "expansions at creation" 0 "$(info_field e.amq expansions)"
expect_eq "start buckets" 256 "$(info_field e.amq 'start buckets')"
seq 1 100000 >k1
seq 100001 300000 >k2
expect_status 0 "$AMQ" add e.amq k1
expect_eq "expansions after 100k" 4 "$(info_field e.amq expansions)"
expect_status 0 "$AMQ" add e.amq k2
expect_eq "items" 300000 "$(info_field e.amq items)"
expect_eq "expansions after 300k" 6 "$(info_field e.amq expansions)"
expect_eq "newest generation's bits" 15 "$(info_field e.amq 'generation 6 fingerprint bits')"
expect_eq "oldest generation's bits" 9 "$(info_field e.amq 'generation 0 fingerprint bits')"
cat k1 k2 >all
expect_eq "every key present" 300000 "$("$AMQ" query -c e.amq all)"
seq 1000001 1100000 >absent
fp=$("$AMQ" query -c e.amq absent)
[ "$fp" -le 1000 ] || fail "$fp of 100000 absent keys answered (over 1 %)"

CASE=expandable-remove
expect_status 0 "$AMQ" remove e.amq k1
expect_eq "items after removing k1" 200000 "$(info_field e.amq items)"
expect_eq "the others present" 200000 "$("$AMQ" query -c e.amq k2)"
fp=$("$AMQ" query -c e.amq k1)
[ "$fp" -le 1000 ] || fail "$fp of 100000 removed keys still answered (over 1 %)"

CASE=expandable-start
expect_status 0 "$AMQ" create s.amq --type expandable --capacity 1000 --fpp 0.02
expect_eq "start buckets for 1000" 64 "$(info_field s.amq 'start buckets')"
expect_status 2 "$AMQ" create x.amq --type expandable --fpp 0.0001
expect_stderr_has "false-positive target must be in"
expect_status 2 "$AMQ" create x.amq --type expandable --fingerprint-bits 12
expect_stderr_has "does not apply to --type expandable"

CASE=expandable-copies-of-one-key
# 32 copies of one key, then a refusal that says so (it said a cuckoo filter's limit, or
# "filter is full" of a filter that grows).
expect_status 0 "$AMQ" create dup.amq --type expandable
i=0
while [ $i -lt 32 ]; do
    echo dup | "$AMQ" add -q dup.amq || fail "copy $((i + 1)) of one key refused"
    i=$((i + 1))
done
cp dup.amq dup.orig
echo dup | expect_status 2 "$AMQ" add dup.amq
expect_stderr_has "a key of this run is stored too many times already"
expect_stderr_has "an expandable filter keeps 32 of one key"
expect_stderr_lacks "bucket"
expect_same_file dup.amq dup.orig

CASE=expandable-keys-crowded-into-one-bucket
# Lines whose murmur64a hash has its top 12 bits 0 (one in 4,096: a weak hash, or keys
# chosen against the seed) all fall in bucket 0: past its 31 lanes and 256 stashed
# entries the add is refused with a message that says so, the file unchanged.  Before,
# every one went to the stash, in one probe run each add and query walked.
seq 1 1500000 >lines
"$AMQ" hash --algo murmur64a <lines | paste -d ' ' - lines | awk '$1 ~ /^000/ {print $2}' >crowd
[ "$(wc -l <crowd)" -gt 300 ] || fail "only $(wc -l <crowd) crowded lines"
expect_status 0 "$AMQ" create crowd.amq --type expandable --hash murmur64a
cp crowd.amq crowd.orig
expect_status 2 "$AMQ" add crowd.amq crowd
expect_stderr_has "too many keys fall in the bucket of a key of this run"
expect_stderr_lacks "stored too many times"
expect_same_file crowd.amq crowd.orig
head -250 crowd | expect_status 0 "$AMQ" add crowd.amq
expect_eq "the first 250 present" 250 "$(head -250 crowd | "$AMQ" query -c crowd.amq)"

finish
