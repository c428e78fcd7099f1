#!/bin/sh
# test-servers.sh MODULE - the module's whole Redis suite (tests/redis/run.py) on every server
# amq.so supports: Debian 12's redis-server 7.0, Redis 8.0.2 and Valkey 8.1.1 (built once per
# machine from Debian 13 source packages by scripts/build-servers.sh, cached outside the tree).
#
# A server that cannot be built (no network to Debian's archive, no compiler packages) is
# reported and skipped: the suite still runs on the others, and the run fails only when a test
# fails - or when AMQ_SERVERS_REQUIRED=1, which makes a missing server an error too.
set -u
module=${1:?usage: test-servers.sh MODULE}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cache=${AMQ_SERVERS_CACHE:-/var/cache/amq-servers}
start=$(date +%s)

servers="/usr/bin/redis-server"
skipped=""
t0=$(date +%s)
if built=$("$here/build-servers.sh" redis valkey); then
    servers="$servers $(printf '%s\n' "$built" | awk '{print $3}' | tr '\n' ' ')"
else
    # Build whatever can be built, one by one, to say exactly what is missing.
    for s in redis valkey; do
        if line=$("$here/build-servers.sh" "$s"); then
            servers="$servers $(printf '%s\n' "$line" | awk '{print $3}')"
        else
            skipped="$skipped $s"
        fi
    done
fi
echo "test-servers: servers ready in $(( $(date +%s) - t0 ))s (cache $cache)"

failed=""
for srv in $servers; do
    if [ ! -x "$srv" ]; then
        skipped="$skipped $srv"
        continue
    fi
    ver=$("$srv" --version | head -n 1)
    echo "=== test-servers: $ver"
    t1=$(date +%s)
    if REDIS_SERVER="$srv" /usr/bin/python3 "$root/tests/redis/run.py" --module "$module"; then
        echo "=== test-servers: passed on $srv in $(( $(date +%s) - t1 ))s"
    else
        echo "=== test-servers: FAILED on $srv"
        failed="$failed $srv"
    fi
done

echo "test-servers: $(( $(date +%s) - start ))s in all"
if [ -n "$skipped" ]; then
    echo "test-servers: WARNING: not tested on:$skipped (could not build; see above)"
    [ "${AMQ_SERVERS_REQUIRED:-0}" = 1 ] && exit 1
fi
if [ -n "$failed" ]; then
    echo "test-servers: FAILED on:$failed"
    exit 1
fi
echo "test-servers: all passed"
