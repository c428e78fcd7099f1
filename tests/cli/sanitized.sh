#!/bin/sh
# sanitized.sh - the tool built with ASan + UBSan (make test-asan builds
# build/asan/amq) through each command's ordinary and refusal paths: every
# exit status is the expected one, and no sanitizer report appears (a leak
# on a refusal path, issue 45: `remove` on a static filter kept its target).
# Small inputs: the CLI suite (test_*.sh) covers behaviour; this covers memory.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=99${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

# san_status WANT CMD... : expect_status, and no sanitizer report.
san_status() {
    expect_status "$@"
    checks=$((checks + 1))
    if grep -q 'Sanitizer\|runtime error:' "$T/.err"; then
        shift
        fail "'$*' reported: $(grep -m3 'Sanitizer\|runtime error:\|#[0-9] ' "$T/.err" | head -c 600)"
    fi
}

seq 1 3000 >keys
seq 3001 4000 >other

CASE=kinds
for ty in bloom blocked partitioned cuckoo scalable-bloom scalable-cuckoo aging; do
    if [ $ty = aging ]; then
        san_status 0 "$AMQ" create $ty.amq --type $ty --window 10000
    else
        san_status 0 "$AMQ" create $ty.amq --type $ty --capacity 5000
    fi
    san_status 0 "$AMQ" add $ty.amq keys
    san_status 0 "$AMQ" query -c $ty.amq keys
    san_status 0 "$AMQ" info $ty.amq
done
for ty in cuckoo scalable-cuckoo; do
    san_status 0 "$AMQ" remove $ty.amq other
done

CASE=static-refusals
for ty in fuse ribbon; do
    san_status 0 "$AMQ" build --type $ty $ty.amq keys
    san_status 2 "$AMQ" remove $ty.amq keys
    expect_stderr_has "is static"
    san_status 2 "$AMQ" add $ty.amq other
    expect_stderr_has "is static"
    san_status 0 "$AMQ" query -c $ty.amq keys
done
san_status 2 "$AMQ" remove bloom.amq keys
expect_stderr_has "cannot remove keys"

CASE=errors
san_status 2 "$AMQ" add nosuch.amq keys
san_status 2 "$AMQ" add cuckoo.amq no-such-input
san_status 2 "$AMQ" add --duplicates --skip-maybe-present cuckoo.amq keys
san_status 2 "$AMQ" create bloom.amq --capacity 10
san_status 2 "$AMQ" merge m.amq bloom.amq cuckoo.amq

CASE=others
san_status 0 "$AMQ" merge m.amq bloom.amq bloom.amq
san_status 0 "$AMQ" build b.amq keys
san_status 0 "$AMQ" dedup keys
san_status 0 "$AMQ" hash hello
san_status 0 "$AMQ" build --guava g.amq keys
san_status 0 "$AMQ" export --to guava g.amq g.guava
san_status 0 "$AMQ" import --from guava g.guava g2.amq

CASE=filter-stdin
# a filter on standard input: kept for a read-only view, freed after a copy
san_status 0 sh -c "cat cuckoo.amq | '$AMQ' info -"
san_status 0 sh -c "cat fuse.amq | '$AMQ' query -c - keys"
san_status 0 sh -c "cat bloom.amq | '$AMQ' merge m2.amq - bloom.amq"
san_status 0 sh -c "cat scalable-bloom.amq | '$AMQ' export --to redis k - k.resp"
san_status 2 sh -c "cat bloom.amq | '$AMQ' merge m3.amq - -"
san_status 2 sh -c "cat bloom.amq keys | '$AMQ' info -"
san_status 2 sh -c "head -c 300 bloom.amq | '$AMQ' info -"

finish
