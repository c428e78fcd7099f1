#!/bin/sh
# growth-proto.sh - the quotient kind at another growth factor (QF_GROWTH),
# one filter or cut into segments with staggered starts, beside the kind as
# it ships, in one process by turns (build/bench/growth-proto,
# bench/expandable/growth-proto.c): each side's bits per key, rate and ns
# an add at every power of ten.
#
#   scripts/growth-proto.sh [--factor G] [--segments S] [--n N] [--start C]
#
# Builds this tree's libamq.so, and the same sources with -DQF_GROWTH=G
# (default 1.2) in a temporary directory; S (default 1) segments each
# starting at C (default 61) keys times G^(j/S).
set -eu
factor=1.2
segments=1
n=1e8
start=61
while [ $# -gt 0 ]; do
    case $1 in
    --factor) factor=$2; shift 2 ;;
    --segments) segments=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --start) start=$2; shift 2 ;;
    *) echo "usage: $0 [--factor G] [--segments S] [--n N] [--start C]" >&2; exit 2 ;;
    esac
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/amq-growth-proto-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "growth-proto: building libamq.so with QF_GROWTH=$factor ..." >&2
mkdir "$tmp/g"
tar -c --exclude=./build --exclude=./.git . | tar -x -C "$tmp/g"
nice make -C "$tmp/g" -j2 build/libamq.so EXTRA_CFLAGS="-DQF_GROWTH=$factor" >"$tmp/g.log" 2>&1 ||
    { cat "$tmp/g.log" >&2; exit 1; }
cp -L "$tmp/g/build/libamq.so" "$tmp/g.so"
make -j2 build/libamq.so build/bench/growth-proto >"$tmp/one.log" 2>&1 || { cat "$tmp/one.log" >&2; exit 1; }
cp -L build/libamq.so "$tmp/one.so"
build/bench/growth-proto "$tmp/g.so" "$tmp/one.so" --segments "$segments" --stagger "$factor" \
    --n "$n" --start "$start"
