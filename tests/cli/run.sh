#!/bin/sh
# run.sh - runs every CLI test script (tests/cli/test_*.sh) with AMQ set.
dir=$(dirname "$0")
status=0
for t in "$dir"/test_*.sh; do
    sh "$t" || status=1
done
exit $status
