#!/bin/sh
# test-module-asan.sh MODULE [TEST_FILE...] - the module's Redis suite with amq.so built with
# ASan + UBSan (make BUILD=build/asan SAN=1), loaded into Redis 8.0.2 built from source with
# libc's malloc (scripts/build-servers.sh), the sanitizer's runtime preloaded: the module's
# own heap blocks (RedisModule_Alloc is the server's malloc) then carry ASan's redzones, so an
# overread in a command, RDB, RESTORE or AOF path stops the server with a report.  Reports go
# to files (the suite sends the servers' output nowhere), including a forked child's (BGSAVE,
# AOF rewrite): ASan's by its log_path, UBSan's on the server's standard error, kept in a file
# too (UBSan beside a preloaded ASan writes there whatever its log_path says); any report fails
# the run.
#
# The default files leave out test_memory (it weighs the server's allocations, which ASan
# pads; test_cf's one such check is skipped under AMQ_REDIS_SANITIZED), test_servers (it starts
# Debian's Redis 7.0, built with jemalloc, which cannot take the preloaded runtime) and
# test_faults (kills and memory pressure of the server, 2.5 min under ASan; make test-servers
# runs it on every server).
set -u
. "$(dirname "$0")/sanitizer-reports.sh"
module=${1:?usage: test-module-asan.sh MODULE [TEST_FILE...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cc=${CC:-cc}

line=$("$here/build-servers.sh" redis) || {
    echo "test-module-asan: Redis 8 could not be built (see above)" >&2
    exit 1
}
server=$(printf '%s\n' "$line" | awk '{print $3}')
asan=$("$cc" -print-file-name=libasan.so)
if [ ! -e "$asan" ]; then
    echo "test-module-asan: $cc has no libasan.so to preload" >&2
    exit 1
fi
tmp=$(mktemp -d /tmp/amq-module-asan.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/reports"
# (the suite starts the server by a path: a script that starts it with the runtime preloaded)
cat > "$tmp/redis-server" <<EOF
#!/bin/sh
LD_PRELOAD=$asan \\
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:log_path=$tmp/reports/asan \\
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \\
exec $server "\$@" 2>>$tmp/reports/stderr.\$\$
EOF
chmod +x "$tmp/redis-server"

if [ $# -eq 0 ]; then
    set --
    for f in "$root"/tests/redis/test_*.py; do
        case $(basename "$f") in
            test_memory.py | test_servers.py | test_faults.py) ;;
            *) set -- "$@" "$f" ;;
        esac
    done
fi

echo "test-module-asan: $module in $("$server" --version | head -n 1), $asan preloaded"
status=0
AMQ_REDIS_SANITIZED=1 REDIS_SERVER="$tmp/redis-server" REDIS_CLI="$(dirname "$server")/redis-cli" \
    /usr/bin/python3 "$root/tests/redis/run.py" --module "$module" "$@" || status=1
sanitizer_verdict test-module-asan $status "$tmp"/reports
