#!/bin/sh
# build-1e9.sh - builds a static filter of 1,000,000,000 generated 16-byte keys
# (16 hex digits, bench/tool/gen-lines.c, never stored) with `amq build --type
# KIND`, under /usr/bin/time -v, then queries the first 10M keys again (no false
# negative allowed) and writes the figures to docs/benchmarks-1e9-KIND.txt,
# which docs/benchmarks.md includes.
#   bench/static/build-1e9.sh fuse|ribbon [AMQ] [N]
# Needs about 8 GB free in $TMPDIR (the spilled hashes) and 1.2 GB for the file.
set -e
KIND=${1:?usage: build-1e9.sh fuse|ribbon [AMQ] [N]}
AMQ=${2:-build/amq}
N=${3:-1000000000}
DIR=${TMPDIR:-/tmp}/amq-1e9.$$
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
cc -O2 -std=c11 -o "$DIR/gen-lines" bench/tool/gen-lines.c -lm
/usr/bin/time -v sh -c "'$DIR/gen-lines' dups $N 0 7 | nice '$AMQ' build '$DIR/f.amq' --type $KIND -q -" \
    2>"$DIR/time.txt"
FN=$("$DIR/gen-lines" dups 10000000 0 7 | "$AMQ" query "$DIR/f.amq" -v -c --trust || true)
OUT=docs/benchmarks-1e9-$KIND.txt
{
    echo "| $KIND | $N | $(grep 'Elapsed (wall' "$DIR/time.txt" | sed 's/.*: //') |" \
         "$(grep 'Maximum resident' "$DIR/time.txt" | sed 's/.*: //') KiB |" \
         "$(stat -c %s "$DIR/f.amq") | $("$AMQ" info "$DIR/f.amq" | grep 'bits per item' | sed 's/bits per item: *//') |" \
         "$FN of 10,000,000 |"
} >"$OUT"
cat "$OUT"
