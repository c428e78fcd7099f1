#!/bin/sh
# test-example.sh BUILD - installs amq into a scratch prefix, builds
# examples/*.c with pkg-config against the installed library, the shared
# one and the static one, and runs them.
set -e
build=${1:-build}
stage=$(mktemp -d "${TMPDIR:-/tmp}/amq-stage-XXXXXX")
trap 'rm -rf "$stage"' EXIT
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
"$stage/usr/bin/amq" --version >/dev/null
echo "examples: built with pkg-config against the installed library and ran"
