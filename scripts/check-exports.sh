#!/bin/sh
# check-exports.sh LIB.so [INCLUDE_DIR] - the shared library exports exactly
# the functions its headers declare AMQ_API: nothing outside the amq_
# namespace, no internal helper, no declared function missing, and a stable
# surface of at most AMQ_STABLE_MAX functions (docs/api.md: a new function
# goes to <amq/advanced.h> unless the stable API cannot say it), each named
# by a test.  The deprecated old names of amq/compat.h count apart (kept one
# minor version after a rename).  Prints the three counts.
# check-exports.sh --stable-count [INCLUDE_DIR] prints the number of stable
# functions the headers declare (what README.md and docs/api.md state;
# tests/cli/test_readme.sh compares).
set -e
lib=$1
inc=${2:-include}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/amq-exports-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The name of every function an AMQ_API declaration introduces (the
# declaration may span lines: the name is the identifier before the first
# parenthesis after AMQ_API).
declared() {
    for h in "$@"; do
        perl -0pe 's{/\*.*?\*/}{}gs; s{^[ \t]*#.*$}{}mg' "$h" | tr '\n' ' ' | grep -o 'AMQ_API [^(;]*(' | sed 's/($//; s/.*[ *]//'
    done | sort -u
}
# The stable functions: amq/fuse_view.h is part of the advanced API (advanced.h includes it);
# amq/compat.h holds the deprecated names.
stable() {
    declared "$inc"/amq.h $(ls "$inc"/amq/*.h | grep -v '/advanced\.h$' | grep -v '/fuse_view\.h$' |
                            grep -v '/compat\.h$')
}
if [ "$lib" = --stable-count ]; then
    stable | wc -l
    exit 0
fi
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort -u > "$tmp/exported"
bad=$(grep -v '^amq_' "$tmp/exported" || true)
if [ -n "$bad" ]; then
    echo "check-exports: $lib exports symbols outside the amq_ namespace:" >&2
    echo "$bad" >&2
    exit 1
fi

stable > "$tmp/stable"
declared "$inc"/amq/advanced.h "$inc"/amq/fuse_view.h > "$tmp/advanced"
declared "$inc"/amq/compat.h > "$tmp/deprecated"
sort -u "$tmp/stable" "$tmp/advanced" "$tmp/deprecated" > "$tmp/declared"

both=$(comm -12 "$tmp/stable" "$tmp/advanced")
if [ -n "$both" ]; then
    echo "check-exports: declared in both a stable header and amq/advanced.h:" >&2
    echo "$both" >&2
    exit 1
fi
extra=$(comm -23 "$tmp/exported" "$tmp/declared")
if [ -n "$extra" ]; then
    echo "check-exports: exported but declared in no public header (internal?):" >&2
    echo "$extra" >&2
    exit 1
fi
missing=$(comm -13 "$tmp/exported" "$tmp/declared")
if [ -n "$missing" ]; then
    echo "check-exports: declared AMQ_API but not exported by $lib:" >&2
    echo "$missing" >&2
    exit 1
fi
stable_max=${AMQ_STABLE_MAX:-100}
if [ "$(wc -l < "$tmp/stable")" -gt "$stable_max" ]; then
    echo "check-exports: $(wc -l < "$tmp/stable") stable functions, over AMQ_STABLE_MAX=$stable_max" \
         "(docs/api.md: new calls go to amq/advanced.h unless the stable API cannot say them)" >&2
    exit 1
fi
# Every exported function is called by a unit test or a fuzz target by
# name (the tool and the module reach some only through their own tests).
untested=$(for f in $(cat "$tmp/declared"); do
    grep -rqw --include='*.c' --include='*.cc' --include='*.h' "$f" tests fuzz || echo "$f"
done)
if [ -n "$untested" ]; then
    echo "check-exports: exported but named by no test under tests/ or fuzz/:" >&2
    echo "$untested" >&2
    exit 1
fi
echo "exports: $(wc -l < "$tmp/exported") amq_ functions = $(wc -l < "$tmp/stable") stable" \
     "+ $(wc -l < "$tmp/advanced") advanced (amq/advanced.h)" \
     "+ $(wc -l < "$tmp/deprecated") deprecated (amq/compat.h), nothing else"
