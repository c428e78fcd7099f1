#!/bin/sh
# Runs each test program given; fails if any fails.
status=0
for t in "$@"; do
    if ! "$t"; then
        echo "FAILED: $t" >&2
        status=1
    fi
done
exit $status
