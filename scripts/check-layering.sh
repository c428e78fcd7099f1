#!/bin/sh
# check-layering.sh BUILD - the layers are layers, checked on the objects (nm), not the sources:
#  1. the tool, the Redis module and the benchmark call the library only through functions
#     libamq.so exports (they link the static archive, so without this check they could reach
#     an internal function by declaring it themselves);
#  2. src/common (hash, container, file reader, journal reader, allocation, errors, CPU, fields)
#     calls nothing in the library above it;
#  3. no two library objects need each other, directly or through others (no cycle);
#  4. a kind's adapter and codec in a file of their own (src/<kind>_kind.c) are needed by
#     the generic handle (src/filter.o) alone: the kind's algorithm below never calls up;
#     and every kind's table the handle registers is defined in such a file, none beside
#     an algorithm;
#  5. an instruction set's path (src/*_avx2.c, *_avx512.c, *_scalar.c, *_concurrent.c) needs
#     nothing in the library but src/common: the kind's dispatcher is the only way in.
#  6. one CPU module: only src/common/cpu.c reads AMQ_SIMD or probes the CPU (sources).
# tests/layering/run.sh shows each check failing on a deliberate violation.
set -e
build=${1:-build}
lib=$build/libamq.so
tmp=$(mktemp -d "${TMPDIR:-/tmp}/amq-layering-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0

# amq_ symbols the objects $@ need and do not define themselves
needs() {
    nm -u "$@" | awk '$1 == "U" && $2 ~ /^amq_/ {print $2}' | sort -u > "$tmp/u"
    nm --defined-only "$@" | awk '{print $3}' | sort -u > "$tmp/d"
    comm -23 "$tmp/u" "$tmp/d"
}

nm -D --defined-only "$lib" | awk '{print $3}' | sort -u > "$tmp/exported"
for dir in cli redis bench; do
    objs=$(ls "$build"/obj/"$dir"/*.o 2>/dev/null || true)
    [ -n "$objs" ] || { echo "check-layering: no objects in $build/obj/$dir" >&2; exit 1; }
    bad=$(needs $objs | comm -23 - "$tmp/exported")
    if [ -n "$bad" ]; then
        echo "check-layering: $dir/ calls library functions that are not exported:" >&2
        echo "$bad" >&2
        status=1
    fi
done

common=$(ls "$build"/obj/src/common/*.o)
bad=$(needs $common)
if [ -n "$bad" ]; then
    echo "check-layering: src/common calls the library above it:" >&2
    for s in $bad; do
        for o in $common; do
            nm -u "$o" | awk -v s="$s" '$2 == s {found=1} END {exit !found}' &&
                echo "  $(basename "$o") needs $s" >&2
        done
    done
    status=1
fi

# Object graph: an edge A B when A needs a symbol B defines; tsort finds any loop.  One nm
# over all objects for each side (-A names the object on each line: a run per object cost
# most of this check's time in process starts).
lib_objs="$common $(ls "$build"/obj/src/*.o)"
nm -A --defined-only $lib_objs | awk -v p="$build/obj/" '$(NF - 1) ~ /^[TDRB]$/ {
    o = substr($1, 1, index($1, ".o:") + 1); if (index(o, p) == 1) o = substr(o, length(p) + 1)
    print $NF, o }' | sort > "$tmp/defs"
nm -A -u $lib_objs | awk -v p="$build/obj/" '{
    o = substr($1, 1, index($1, ".o:") + 1); if (index(o, p) == 1) o = substr(o, length(p) + 1)
    print $NF, o }' | sort -u |
    join - "$tmp/defs" | awk '$2 != $3 {print $2, $3}' | sort -u > "$tmp/edges"
if ! tsort "$tmp/edges" > /dev/null 2> "$tmp/loops"; then
    echo "check-layering: library objects that need each other (a cycle):" >&2
    grep -v 'input contains a loop' "$tmp/loops" | sed 's/^tsort: /  /' >&2
    status=1
fi

bad=$(awk '$2 ~ /_kind\.o$/ && $1 != "src/filter.o" {print "  " $1 " needs " $2}' "$tmp/edges")
if [ -n "$bad" ]; then
    echo "check-layering: a kind's adapter is needed by more than the generic handle:" >&2
    echo "$bad" >&2
    status=1
fi
# The tables filter.o registers (kinds[]): each defined in an adapter file.
bad=$(nm -u "$build/obj/src/filter.o" | awk '$2 ~ /^amq_.*_ops$/ {print $2}' |
      while read -r t; do
          at=$(awk -v t="$t" '$1 == t {print $2}' "$tmp/defs")
          case "$at" in src/*_kind.o) ;; *) echo "  $t is defined in ${at:-no library object}" ;; esac
      done)
if [ -n "$bad" ]; then
    echo "check-layering: a kind's table is not in its adapter file (src/<kind>_kind.c):" >&2
    echo "$bad" >&2
    status=1
fi
bad=$(awk '$1 ~ /_(avx2|avx512|scalar|concurrent)\.o$/ && $2 !~ /^src\/common\// {print "  " $1 " needs " $2}' "$tmp/edges")
if [ -n "$bad" ]; then
    echo "check-layering: an instruction set's path needs more than src/common:" >&2
    echo "$bad" >&2
    status=1
fi

# One CPU module: the instruction sets and the AMQ_SIMD cap are read in src/common/cpu.c only.
root=${AMQ_LAYERING_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
simd=$(grep -rlE 'getenv\("AMQ_SIMD"\)|__builtin_cpu_supports|__get_cpuid' "$root/src" |
       grep -v 'src/common/cpu\.c$' || true)
if [ -n "$simd" ]; then
    echo "check-layering: CPU features or AMQ_SIMD read outside src/common/cpu.c:" >&2
    echo "$simd" >&2
    status=1
fi


[ $status -eq 0 ] && echo "layering: cli/, redis/, bench/ use exported functions only; src/common needs nothing above it; no cycle between library objects; every table is in an adapter file, reached from the handle only; instruction-set paths are leaves; one CPU module"
exit $status
