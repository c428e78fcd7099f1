#!/bin/sh
# ab-lib.sh - an A/B of two builds of libamq in one process, by turns
# (build/bench/ab-lib, bench/expandable/ab-lib.c): the same keys added to
# and queried in one filter of each build, so that the VM's swings between
# processes fall on both alike.
#
#   scripts/ab-lib.sh --base COMMIT [--head COMMIT] [ab-lib options ...]
#
# A is libamq.so built at --base, B at --head (default: this tree's
# build/libamq.so, built by make).  Commits are built from `git archive` in
# a temporary directory.  The options go to ab-lib: --kind NAME (default
# quotient), --n N, --start N, --chunk N, --rounds R, --queries Q, --adds
# one|batched (the adds one key at a time, the default, or hashed and added
# in batches), and --growth R (the adds of one growth alone, on R fresh
# clones of each).
set -eu
base=
head=
while [ $# -gt 0 ]; do
    case $1 in
    --base) base=$2; shift 2 ;;
    --head) head=$2; shift 2 ;;
    *) break ;;
    esac
done
[ -n "$base" ] || { echo "usage: $0 --base COMMIT [--head COMMIT] [ab-lib options]" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/amq-ab-lib-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# lib COMMIT NAME: builds libamq.so at COMMIT and copies it to $tmp/NAME.so.
lib() {
    echo "ab-lib: building libamq.so at $1 ..." >&2
    mkdir "$tmp/$2"
    git archive "$1" | tar -x -C "$tmp/$2"
    nice make -C "$tmp/$2" -j2 build/libamq.so >"$tmp/$2.log" 2>&1 || { cat "$tmp/$2.log" >&2; exit 1; }
    cp -L "$tmp/$2/build/libamq.so" "$tmp/$2.so"
}
lib "$base" a
if [ -n "$head" ]; then
    lib "$head" b
else
    make -j2 build/libamq.so build/bench/ab-lib >"$tmp/b.log" 2>&1 || { cat "$tmp/b.log" >&2; exit 1; }
    cp -L build/libamq.so "$tmp/b.so"
fi
make build/bench/ab-lib >/dev/null
build/bench/ab-lib "$tmp/a.so" "$tmp/b.so" "$@"
