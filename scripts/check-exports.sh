#!/bin/sh
# check-exports.sh LIB.so - the shared library exports amq_* functions only.
bad=$(nm -D --defined-only "$1" | awk '$2 ~ /^[TDBRV]$/ {print $3}' | grep -v '^amq_' || true)
if [ -n "$bad" ]; then
    echo "check-exports: $1 exports symbols outside the amq_ namespace:" >&2
    echo "$bad" >&2
    exit 1
fi
hidden=$(nm -D --defined-only "$1" | awk '{print $3}' | grep -E '^amq_(region|alloc_|malloc|calloc|free|err|container|checksum|file_|atomic|kind_lookup|field_)' || true)
if [ -n "$hidden" ]; then
    echo "check-exports: internal functions are exported:" >&2
    echo "$hidden" >&2
    exit 1
fi
echo "exports: $(nm -D --defined-only "$1" | grep -c ' amq_') amq_ symbols, nothing else"
