#!/bin/sh
# run.sh BUILD CC - scripts/check-layering.sh passes on the build and fails on each deliberate
# violation added to a copy of its object tree: an upward call from src/common, a cycle
# between two library objects, the tool calling a function libamq.so does not export, an
# algorithm calling its kind's adapter, a kind's table defined beside its algorithm, an
# instruction set's path calling the library, and a source reading AMQ_SIMD outside
# src/common/cpu.c.
set -u
build=${1:-build}
cc=${2:-cc}
here=$(cd "$(dirname "$0")" && pwd)
check="$here/../../scripts/check-layering.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/amq-layering-test-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0

abs=$(cd "$build" && pwd)
overlay() { # the build's objects and library as links in fresh directories, to add one object to
    rm -rf "$tmp/b"
    mkdir -p "$tmp/b/obj"
    cp -Rs "$abs/obj/src" "$abs/obj/cli" "$abs/obj/redis" "$abs/obj/bench" "$tmp/b/obj/"
    ln -s "$abs/libamq.so" "$tmp/b/"
}
object() { # object OUT SOURCE-TEXT
    printf '%s\n' "$2" > "$tmp/x.c"
    "$cc" -c -o "$1" "$tmp/x.c"
}
expect_fail() { # expect_fail WHAT PATTERN
    if "$check" "$tmp/b" > "$tmp/out" 2>&1; then
        echo "FAIL: check-layering passed despite $1"; fail=1
    elif ! grep -q "$2" "$tmp/out"; then
        echo "FAIL: check-layering failed on $1 without saying '$2':"; cat "$tmp/out"; fail=1
    else
        echo "ok: check-layering refuses $1"
    fi
}

if "$check" "$build" > "$tmp/out" 2>&1; then echo "ok: the build's layering holds"
else echo "FAIL: the build's layering:"; cat "$tmp/out"; fail=1; fi

overlay
object "$tmp/b/obj/src/common/upward.o" \
    'int amq_filter_open(void); int amq_upward_probe(void) { return amq_filter_open(); }'
expect_fail "an upward call from src/common" "upward.o needs amq_filter_open"

overlay
object "$tmp/b/obj/src/zz1.o" 'int amq_zz2(void); int amq_zz1(void) { return amq_zz2(); }'
object "$tmp/b/obj/src/zz2.o" 'int amq_zz1(void); int amq_zz2(void) { return amq_zz1(); }'
expect_fail "two library objects that need each other" "a cycle"

overlay
object "$tmp/b/obj/cli/zz.o" 'int amq_fields(void); int zz_main(void) { return amq_fields(); }'
expect_fail "the tool calling an internal function" "calls library functions that are not exported"

overlay
object "$tmp/b/obj/src/zz_kind.o" 'int amq_zz_adapter(void); int amq_zz_adapter(void) { return 1; }'
object "$tmp/b/obj/src/zz.o" 'int amq_zz_adapter(void); int amq_zz_algo(void) { return amq_zz_adapter(); }'
expect_fail "an algorithm calling its kind's adapter" "zz.o needs src/zz_kind.o"

overlay
rm "$tmp/b/obj/src/aging_kind.o"
object "$tmp/b/obj/src/zz.o" 'const int amq_aging_ops = 1;'
expect_fail "a kind's table beside its algorithm" "amq_aging_ops is defined in src/zz.o"

overlay
object "$tmp/b/obj/src/zz_avx2.o" 'int amq_cuckoo_items(void); int amq_zz_path(void) { return amq_cuckoo_items(); }'
expect_fail "an instruction set's path calling the library" "zz_avx2.o needs src/cuckoo_life.o"

mkdir -p "$tmp/s/src"
cp -R src/. "$tmp/s/src/"
printf '#include <stdlib.h>\nint zz_simd(void) { return getenv("AMQ_SIMD") != NULL; }\n' > "$tmp/s/src/zz.c"
export AMQ_LAYERING_SRC="$tmp/s"
expect_fail "a kind reading AMQ_SIMD itself" "outside src/common/cpu.c"
unset AMQ_LAYERING_SRC

exit $fail
