#!/bin/sh
# check-prefetch.sh [BUILD] - every prefetch the library and the tool ask for is in the code
# the compiler makes of them.  gcc 12's ipa-modref takes a function that holds nothing but
# prefetches for one without side effects and drops its calls: the bloom and aging kinds'
# batch loops ran with no prefetch at all (found 2026-12-03; their helpers are now inlined).
# Each source that mentions __builtin_prefetch is compiled again with its own flags (from
# `make -n`) and -fno-ipa-modref: that object and the one built must hold as many prefetch
# instructions (objdump's).  A compiler without that option (clang) keeps them: skipped.
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
# the prefetch instructions in an object's code
prefetches() {
    objdump -d --no-show-raw-insn "$1" | grep -cE '^ +[0-9a-f]+:[[:space:]]+prefetch' || true
}
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
    # the object as built is the one make made (not compiled again: -g changes no code)
    kept_cmd=$(echo "$cmd" | sed "s| -g | |; s| -MMD -MP||; s| -o $obj| -o $tmp/kept.o|")
    sh -c "$kept_cmd -fno-ipa-modref"
    as_built=$(prefetches "$obj")
    kept=$(prefetches "$tmp/kept.o")
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
