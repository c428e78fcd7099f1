#!/bin/sh
# test-example.sh BUILD - installs amq into a scratch prefix, builds
# examples/*.c with pkg-config against the installed library, the shared
# one and the static one, and runs them.
set -e
build=${1:-build}
stage=$(mktemp -d "${TMPDIR:-/tmp}/amq-stage-XXXXXX")
trap 'rm -rf "$stage"' EXIT
# A make of its own (no jobserver of the caller's: its warning otherwise).
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
    make --no-print-directory -s install PREFIX="$stage/usr" BUILD="$build" >/dev/null
export PKG_CONFIG_PATH="$stage/usr/lib/pkgconfig"
cc=${CC:-cc}
for src in examples/*.c; do
    name=$(basename "$src" .c)
    # shellcheck disable=SC2046
    $cc -std=c11 -Wall -Wextra -Werror -o "$stage/$name" "$src" $(pkg-config --cflags --libs amq)
    LD_LIBRARY_PATH="$stage/usr/lib" "$stage/$name" "$stage/$name.amq"
    $cc -std=c11 -Wall -Wextra -Werror -o "$stage/$name-static" "$src" \
        $(pkg-config --cflags amq) "$stage/usr/lib/libamq.a" $(pkg-config --static --libs-only-l amq | sed 's/-lamq//')
    "$stage/$name-static" "$stage/$name-static.amq" >/dev/null
done
test -f "$stage/usr/share/man/man1/amq.1"
test -x "$stage/usr/bin/amq"
# One version: the Makefile's (pkg-config, the library's file name), the header's and the
# library's own (amq --version prints both of the latter).
v=$(pkg-config --modversion amq)
"$stage/usr/bin/amq" --version > "$stage/version"
grep -qx "amq $v (libamq $v)" "$stage/version" ||
    { echo "test-example: amq --version says '$(cat "$stage/version")', pkg-config $v" >&2; exit 1; }
test -f "$stage/usr/lib/libamq.so.$v"
echo "examples: built with pkg-config against the installed library and ran"
