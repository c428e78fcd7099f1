#!/bin/sh
# test_quotient.sh - quotient filters through the tool: create without
# --capacity, a million generated keys through add (the file grows with its
# keys, about 20 bits a key), every key present in memory and mmap'd, info's
# fields, the growth limit (the file unchanged), refusals.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

info_field() { "$AMQ" info "$1" | sed -n "s/^$2: *//p"; }
# json_field FILE NAME: a number of info --json
json_field() { "$AMQ" info --json "$1" | tr ',{}' '\n\n\n' | sed -n "s/^ *\"$2\": *//p"; }
# le A B: A <= B, as numbers (floats too)
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }

CASE=quotient-create
expect_status 0 "$AMQ" create q.amq --type quotient
expect_eq "kind" quotient "$(info_field q.amq kind)"
expect_eq "items at creation" 0 "$(info_field q.amq items)"
expect_eq "expansions at creation" 0 "$(info_field q.amq expansions)"
# room for 4,096 keys at 95 %: ceil(4096 / 0.95) slots
expect_eq "start slots" 4312 "$(info_field q.amq 'start slots')"
expect_eq "slots at creation" 4312 "$(info_field q.amq slots)"
size0=$(wc -c <q.amq)

CASE=quotient-million
awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "user:%d:%x\n", i, i * 2654435761 % 4294967296 }' >k1
awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "other:%d\n", i }' >absent
expect_status 0 "$AMQ" add --stats --json q.amq k1
expect_eq "add --stats: read, new" 1 "$(grep -c '"keys_read": 1000000, "keys_new": 1000000,' "$T/.err")"
expect_eq "items" 1000000 "$(info_field q.amq items)"
# the target holds at every size: no "at capacity" for a kind that grows
expect_eq "info's rate line" 1 \
    "$("$AMQ" info q.amq | grep -c '^false positives: *0\.000[0-9]* now, target 0\.01 at every size$')"
expect_eq "every key present (mmap'd)" 1000000 "$("$AMQ" query -c q.amq k1)"
expect_eq "every key present (--trust)" 1000000 "$("$AMQ" query -c --trust q.amq k1)"
expect_eq "every key present (stdin)" 1000000 "$("$AMQ" query -c q.amq - <k1)"
fp=$("$AMQ" query -c q.amq absent)
# the bound info reports is about 2.5e-4 here: 250 expected, 1,000 is far out
[ "$fp" -le 1000 ] || fail "$fp of 1000000 absent keys answered (over 0.1 %)"
exp=$(info_field q.amq expansions)
[ "$exp" -ge 20 ] || fail "$exp expansions from 4,096 keys to 1,000,000"
slots=$(info_field q.amq slots)
entries=$(info_field q.amq entries)
le "$entries" "$(awk -v s="$slots" 'BEGIN { print s * 0.95 }')" ||
    fail "$entries entries in $slots slots: over 95 %"
# memory follows the keys: between 19.2 (95 % full) and 21.3 (just grown) bits a key
bpk=$(info_field q.amq 'bits per item')
le 18 "$bpk" && le "$bpk" 22 || fail "bits per item $bpk, not about 20"
size1=$(wc -c <q.amq)
[ "$size1" -gt "$size0" ] || fail "the file did not grow ($size0 -> $size1 bytes)"
le "$size1" 2750000 || fail "the file is $size1 bytes for 1,000,000 keys (over 22 bits a key)"
bound=$(json_field q.amq fpp_bound)
le "$bound" 0.01 || fail "fpp_bound $bound over the target 0.01"
expect_eq "fpp_now is the bound" "$bound" "$(json_field q.amq fpp_now)"
expect_eq "expansions in --json" "$exp" "$(json_field q.amq expansions)"
"$AMQ" info q.amq >info.txt
grep -q '^entries of 15 bits: *[1-9]' info.txt || fail "info lacks the 15-bit entries"
grep -q '^fpp of 14 bit entries: *[0-9]' info.txt || fail "info lacks the 14-bit entries' rate"
# every line that names a length's entries has its rate, and the counts add up
expect_eq "entries by length" "$entries" \
    "$(sed -n 's/^entries of [0-9]* bits: *//p' info.txt | awk '{ s += $1 } END { print s }')"

CASE=quotient-more
awk 'BEGIN { for (i = 1000000; i < 1200000; i++) printf "user:%d:%x\n", i, i * 2654435761 % 4294967296 }' >k2
expect_status 0 "$AMQ" add q.amq k2
expect_eq "items after 200k more" 1200000 "$(info_field q.amq items)"
cat k1 k2 >all
expect_eq "every key of both runs" 1200000 "$("$AMQ" query -c q.amq all)"
[ "$(info_field q.amq expansions)" -gt "$exp" ] || fail "no growth for 200,000 more keys"

CASE=quotient-settled
# 300,000 keys from 4,096 end inside the growth from 314,665 slots to 346,132 (read to
# 299,884): add finishes it before the save, so the file holds the new table alone
expect_status 0 "$AMQ" create g.amq --type quotient
seq 1 300000 >k300k
expect_status 0 "$AMQ" add g.amq k300k
expect_eq "slots: the growth ended" 346132 "$(info_field g.amq slots)"
expect_eq "no growth under way" 0 "$(info_field g.amq 'growing to slots')"
expect_eq "expansions" 46 "$(info_field g.amq expansions)"
bpk=$(info_field g.amq 'bits per item')
le "$bpk" 22 || fail "bits per item $bpk: the old table saved too"
expect_eq "every key present" 300000 "$("$AMQ" query -c g.amq k300k)"

CASE=quotient-build-settled
# build with a --capacity under the keys grows the same way, and finishes the growth too
expect_status 0 "$AMQ" build bs.amq k300k --type quotient --capacity 4096 -q
expect_eq "slots: those of add's file" "$(info_field g.amq slots)" "$(info_field bs.amq slots)"
expect_eq "no growth under way" 0 "$(info_field bs.amq 'growing to slots')"
bpk=$(info_field bs.amq 'bits per item')
le "$bpk" 22 || fail "bits per item $bpk: the old table saved too"
expect_eq "every key present" 300000 "$("$AMQ" query -c bs.amq k300k)"

CASE=quotient-remove
cp q.amq before.amq
expect_status 2 "$AMQ" remove q.amq k2
expect_stderr_has "a quotient filter cannot remove keys"
expect_stderr_has "the file is left unchanged"
expect_same_file q.amq before.amq

CASE=quotient-limit
# at 1e-4 its 16-bit entries allow few growths: an add past them is refused whole
expect_status 0 "$AMQ" create l.amq --type quotient --fpp 0.0001
head -n 10000 k1 >k10k
expect_status 0 "$AMQ" add l.amq k10k
cp l.amq l-before.amq
head -n 200000 k2 >k200k
expect_status 2 "$AMQ" add l.amq k200k
expect_stderr_has "cannot grow further without its expected false-positive rate passing its target of 0.0001"
expect_stderr_has "the file is left unchanged"
expect_same_file l.amq l-before.amq
expect_eq "the keys before the limit" 10000 "$("$AMQ" query -c l.amq k10k)"

CASE=quotient-start
expect_status 0 "$AMQ" create s.amq --type quotient --capacity 1000 --fpp 0.02
expect_eq "start slots for 1000" 1053 "$(info_field s.amq 'start slots')"
expect_eq "fpp target" 0.02 "$(json_field s.amq fpp_target)"
expect_status 2 "$AMQ" create x.amq --type quotient --fpp 0.00001
expect_stderr_has "false-positive target must be in"
expect_status 2 "$AMQ" create x.amq --type quotient --fingerprint-bits 12
expect_stderr_has "does not apply to --type quotient"
expect_status 2 "$AMQ" create x.amq --type quotient --window 100
expect_stderr_has "does not apply to --type quotient"
[ -e x.amq ] && fail "a refused create left x.amq"

CASE=quotient-build
expect_status 0 "$AMQ" build b.amq k2 --type quotient
expect_eq "built kind" quotient "$(info_field b.amq kind)"
expect_eq "built items" 200000 "$(info_field b.amq items)"
expect_eq "every built key" 200000 "$("$AMQ" query -c b.amq k2)"
expect_status 2 "$AMQ" merge u.amq b.amq q.amq
expect_stderr_has "quotient filters cannot be merged"

finish
