#!/bin/sh
# expandable-1e9.sh [MAX] - grows an expandable filter from 1,000 keys to MAX
# (default 1e9) 8-byte random keys at a 1 % target and prints, at every power
# of ten, the expansions, the rate measured on 10M keys never added and the
# bits per key (expandable-bench --grow-only; docs/expandable.md has the
# figure).  6.3 GiB peak at 1e9 (the table doubling to 2^26 buckets keeps
# the old one meanwhile); 18 minutes on the 2-core machine at load 7-8.
set -e
cd "$(dirname "$0")/.."
max=${1:-1e9}
make --no-print-directory build/bench/expandable-bench >/dev/null
/usr/bin/time -f "%e s, %M KiB peak" build/bench/expandable-bench --max "$max" --absent 1e7 --grow-only
