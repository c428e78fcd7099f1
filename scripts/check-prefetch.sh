#!/bin/sh
# check-prefetch.sh [BUILD] - every prefetch the library and the tool ask for is in the code
# the compiler makes of them.  gcc 12's ipa-modref takes a function that holds nothing but
# prefetches for one without side effects and drops its calls: the bloom and aging kinds'
# batch loops ran with no prefetch at all (found 2026-12-03; their helpers are now inlined).
# Each source that mentions __builtin_prefetch is compiled to assembly with its own flags
# (from `make -n`), once as built and once with -fno-ipa-modref: the two must hold as many
# prefetch instructions.  A compiler without that option (clang) keeps them: skipped.
set -e
build=${1:-build}
# the command make would run for an object (run from make test: not the caller's jobserver)
cmd_of() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -n -B "$1" BUILD="$build" |
        tail -1
}
cc=$(cmd_of "$build/obj/src/filter.o" | cut -d' ' -f1)
if ! echo 'int x;' | "$cc" -fno-ipa-modref -x c -c -o /dev/null - 2>/dev/null; then
    echo "check-prefetch: $cc has no -fno-ipa-modref; skipped"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/amq-prefetch-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
checked=0
for src in src/*.c src/common/*.c cli/*.c; do
    obj=$build/obj/${src%.c}.o
    # the source, or a header of the project it includes, asks for a prefetch
    if ! "$cc" -Iinclude -Isrc -Icli -D_GNU_SOURCE -DAMQ_BUILDING_LIBRARY -DAMQ_ADVANCED_API \
        -mavx2 -mbmi2 -E "$src" 2>/dev/null | grep -q __builtin_prefetch; then
        continue
    fi
    cmd=$(cmd_of "$obj")
    case $cmd in *" -c $src -o $obj"*) ;; *)
        echo "check-prefetch: no compile command for $obj: $cmd" >&2
        status=1
        continue ;;
    esac
    base=$(echo "$cmd" | sed "s| -g | |; s| -MMD -MP||; s| -c $src -o $obj| -S $src -o -|")
    # the two compiles side by side (make test's other stream may have ended by now)
    sh -c "$base -fno-ipa-modref" > "$tmp/kept.s" &
    as_built=$(sh -c "$base" | grep -c 'prefetch' || true)
    wait $! || true
    kept=$(grep -c 'prefetch' "$tmp/kept.s" || true)
    checked=$((checked + 1))
    if [ "$as_built" != "$kept" ]; then
        echo "check-prefetch: $src: $as_built prefetch instructions as built, $kept without" \
            "ipa-modref: the compiler dropped some (make the helper that holds them" \
            "always_inline)" >&2
        status=1
    fi
done
[ $status -eq 0 ] && echo "check-prefetch: $checked sources, every prefetch kept"
exit $status
