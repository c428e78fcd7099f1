#!/bin/sh
# check-layering.sh BUILD - the tool, the Redis module and the benchmark
# call the library only through functions libamq.so exports (the ones its
# public headers declare): they link the static archive, so without this
# check they could reach an internal function by declaring it themselves.
set -e
build=${1:-build}
lib=$build/libamq.so
exported=$(mktemp "${TMPDIR:-/tmp}/amq-layering-XXXXXX")
trap 'rm -f "$exported"' EXIT
nm -D --defined-only "$lib" | awk '{print $3}' | sort -u > "$exported"
status=0
for dir in cli redis bench; do
    objs=$(ls "$build"/obj/"$dir"/*.o 2>/dev/null || true)
    [ -n "$objs" ] || { echo "check-layering: no objects in $build/obj/$dir" >&2; exit 1; }
    # amq_ names the objects need and do not define themselves
    bad=$(nm -u $objs | awk '$1 == "U" && $2 ~ /^amq_/ {print $2}' | sort -u |
          comm -23 - "$exported")
    defined=$(nm --defined-only $objs | awk '{print $3}' | sort -u)
    bad=$(echo "$bad" | grep -vxF "$defined" || true)
    if [ -n "$bad" ]; then
        echo "check-layering: $dir/ calls library functions that are not exported:" >&2
        echo "$bad" >&2
        status=1
    fi
done
[ $status -eq 0 ] && echo "layering: cli/, redis/, bench/ use exported functions only"
exit $status
