#!/bin/sh
# test_limits.sh - absurd parameters at the command line: every one is
# refused with exit status 2, a message on stderr that names the option or
# the limit, and no file left behind.  One row per case: expected status,
# a text the message must contain ('-' for none), then the arguments of
# `amq create F.amq ...` (or of `amq hash` for the hash rows).
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

TAB=$(printf '\t')

# refuse TEXT ARGS... : `amq create x.amq ARGS` exits 2, stderr has TEXT,
# and x.amq does not exist afterwards.
refuse() {
    text=$1
    shift
    rm -f x.amq
    expect_status 2 "$AMQ" create x.amq "$@"
    [ "$text" = - ] || expect_stderr_has "$text"
    checks=$((checks + 1))
    [ -e x.amq ] && fail "'create $*' was refused but left x.amq"
    ls -a | grep -q '\.amqtmp$' && fail "'create $*' left a temporary file"
}

# accept ARGS... : `amq create x.amq ARGS` succeeds and info validates it.
accept() {
    rm -f x.amq
    expect_status 0 "$AMQ" create x.amq "$@"
    expect_status 0 "$AMQ" info x.amq
}

CASE=capacity
refuse "capacity" --capacity 0
refuse "--capacity" --capacity -1
refuse "--capacity" --capacity "${TAB}-5"
refuse "--capacity" --capacity " 5"
refuse "--capacity" --capacity +5
refuse "--capacity" --capacity 1.5
refuse "--capacity" --capacity 1e-3
refuse "--capacity" --capacity nan
refuse "--capacity" --capacity inf
refuse "--capacity" --capacity 1e400
refuse "too large" --capacity 18446744073709551616
refuse "too large" --capacity 99999999999999999999999
refuse "2^43 bits" --capacity 9223372036854775808      # 2^63
refuse "2^43 bits" --capacity 18446744073709551615     # 2^64 - 1
refuse "2^43 bits" --capacity 1e19
refuse "--capacity" --capacity ""
refuse "--capacity" --capacity 5X
accept --capacity 1
accept --capacity 1Ki

CASE=fpp
refuse "rate" --capacity 100 --fpp 0
refuse "rate" --capacity 100 --fpp -0.5
refuse "rate" --capacity 100 --fpp 1
refuse "rate" --capacity 100 --fpp 100%
refuse "rate" --capacity 100 --fpp 1.5
refuse "--fpp" --capacity 100 --fpp nan
refuse "--fpp" --capacity 100 --fpp inf
refuse "--fpp" --capacity 100 --fpp -inf
refuse "--fpp" --capacity 100 --fpp 1e-400
refuse "--fpp" --capacity 100 --fpp 0.01x
refuse "--fpp" --capacity 100 --fpp ""
refuse "would make 997 probes a key; it makes at most 255" --capacity 100 --fpp 1e-300
accept --capacity 100 --fpp 1e-76
accept --capacity 100 --fpp 0.999999
accept --capacity 100 --fpp 1e-20

CASE=bits-per-key
refuse "--bits-per-key" --capacity 100 --bits-per-key 0
refuse "--bits-per-key" --capacity 100 --bits-per-key -3
refuse "--bits-per-key" --capacity 100 --bits-per-key nan
refuse "--bits-per-key" --capacity 100 --bits-per-key inf
refuse "bits per key" --capacity 100 --bits-per-key 1001
refuse "bits per key" --capacity 100 --bits-per-key 1e300
refuse "bits per key" --capacity 18446744073709551615 --bits-per-key 10
refuse "--fpp cannot be combined" --capacity 100 --bits-per-key 10 --fpp 0.01
accept --capacity 100 --bits-per-key 0.001
accept --capacity 100 --bits-per-key 1000

CASE=bits-and-hashes
refuse "--bits" --bits 0 --hashes 3
refuse "--bits" --bits -1 --hashes 3
refuse "--bits" --bits 1.5 --hashes 3
refuse "parameter out of range" --bits 8796093022209 --hashes 3   # 2^43 + 1
refuse "parameter out of range" --bits 18446744073709551615 --hashes 3
refuse "--hashes" --bits 1000 --hashes 0
refuse "--hashes" --bits 1000 --hashes 256
refuse "--hashes" --bits 1000 --hashes -1
refuse "--hashes" --bits 1000 --hashes 4294967297
refuse "go together" --bits 1000
refuse "go together" --capacity 10 --hashes 3
accept --bits 1 --hashes 1
accept --bits 1000 --hashes 255

CASE=hash-and-seed
refuse "--hash" --capacity 10 --hash md5
refuse "murmur3 takes a 32-bit seed (0 to 4294967295), not 4294967296" --capacity 10 --hash murmur3 --seed 4294967296
refuse "redisbloom hashing takes no seed (give 0), not 1" --capacity 10 --hash redisbloom --seed 1
refuse "--seed" --capacity 10 --seed -1
refuse "--seed" --capacity 10 --seed "${TAB}-1"
refuse "--seed" --capacity 10 --seed 18446744073709551616
refuse "--seed" --capacity 10 --seed 0x
refuse "--seed" --capacity 10 --seed 1e3
accept --capacity 10 --seed 18446744073709551615
accept --capacity 10 --hash murmur3 --seed 4294967295

CASE=kind-options
refuse "unknown --type" --capacity 10 --type ""
refuse "does not apply" --capacity 10 --fingerprint-bits 8
refuse "does not apply" --capacity 10 --expansion 2
refuse "does not apply" --capacity 10 --partitions 4

CASE=cuckoo-options
refuse "capacity" --type cuckoo --capacity 0
refuse "capacity" --type cuckoo --capacity 18446744073709551615
refuse "rate" --type cuckoo --capacity 100 --fpp 1
refuse "--fpp" --type cuckoo --capacity 100 --fpp nan
refuse "fingerprint" --type cuckoo --capacity 100 --fingerprint-bits 33
# The library's table of options by kind (amq_option_kinds): --bits/--hashes read by blocked
# too (its exact geometry, refused before), --partitions by no growing kind.
accept --type blocked --bits 100000 --hashes 6
refuse "--partitions does not apply to --type quotient" --type quotient --partitions 4
refuse "4-bit fingerprints cannot reach false-positive rate 1e-06: it needs 19 bits or more" \
    --type cuckoo --capacity 1000 --fingerprint-bits 4 --fpp 1e-6
refuse "--fingerprint-bits" --type cuckoo --capacity 100 --fingerprint-bits 0
refuse "--fingerprint-bits" --type cuckoo --capacity 100 --fingerprint-bits 65
refuse "bucket size" --type cuckoo --capacity 100 --bucket-size 3
refuse "--bucket-size" --type cuckoo --capacity 100 --bucket-size 256
refuse "--max-kicks" --type cuckoo --capacity 100 --max-kicks 0
refuse "--max-kicks" --type cuckoo --capacity 100 --max-kicks 65536
refuse "--max-kicks" --type cuckoo --capacity 100 --max-kicks -1
refuse "does not apply" --type cuckoo --capacity 100 --expansion 2
accept --type cuckoo --capacity 100 --max-kicks 65535

CASE=scalable-options
refuse - --type scalable-bloom --capacity 0
refuse "limit" --type scalable-bloom --capacity 9223372036854775808
refuse - --type scalable-bloom --capacity 100 --fpp 0
refuse "--expansion" --type scalable-bloom --capacity 100 --expansion 32769
refuse "--expansion" --type scalable-bloom --capacity 100 --expansion -2
refuse - --type scalable-cuckoo --capacity 0
refuse - --type scalable-cuckoo --capacity 9223372036854775808
refuse "8-bit" --type scalable-cuckoo --capacity 100 --redisbloom --fingerprint-bits 12
refuse "--bucket-size" --type scalable-cuckoo --capacity 100 --bucket-size 256
refuse "--max-kicks" --type scalable-cuckoo --capacity 100 --max-kicks 65536
refuse "--expansion" --type scalable-cuckoo --capacity 100 --expansion 32769
refuse "does not apply" --type scalable-bloom --capacity 100 --bucket-size 4
accept --type scalable-bloom --capacity 100 --expansion 32768
accept --type scalable-cuckoo --capacity 100 --redisbloom

CASE=endless-input
# A filter "file" that never ends is refused at its first bytes, not read
# until memory runs out.
expect_status 2 timeout 20 "$AMQ" info /dev/zero
expect_stderr_has "not an amq filter file"
expect_status 2 timeout 20 "$AMQ" query /dev/zero keys

CASE=hash-command
expect_status 2 "$AMQ" hash --algo xxh3 --seed "${TAB}-1" x
expect_stderr_has "--seed"
expect_status 2 "$AMQ" hash --algo xxh3 --seed -1 x
expect_status 2 "$AMQ" hash --algo murmur3_32 --seed 0x100000000 x
# Decimal is decimal: a leading zero is not octal.
expect_eq "seed 010 is ten" "$("$AMQ" hash --algo xxh3 --seed 10 x)" \
    "$("$AMQ" hash --algo xxh3 --seed 010 x)"
expect_eq "seed 0x10 is sixteen" "$("$AMQ" hash --algo xxh3 --seed 16 x)" \
    "$("$AMQ" hash --algo xxh3 --seed 0x10 x)"

finish
