#!/bin/sh
# test-python-asan.sh BUILD - the Python package's pytest suite with its extension and libamq
# built with ASan + UBSan (libamq in build/asan, make BUILD=build/asan SAN=1; the extension into
# build/asan/python), run by Debian's python3 with the sanitizer's runtime preloaded and
# PYTHONMALLOC=malloc, so that Python's own objects are malloc's blocks too: an overread of a
# buffer, a key list or a pickle the extension decodes ends with a report, which fails the run
# (ASan's in a file, printed at the end; UBSan's on standard error, which pytest leaves alone).
# The tool and the Redis module the suite also starts are BUILD's, not sanitized.
# AMQ_PYTHON_SANITIZED=1 skips the one test that forks while another thread runs: GCC 12's ASan
# allocator takes no lock around fork(), so such a child can hang on it (seen once in a run).
set -u
. "$(dirname "$0")/sanitizer-reports.sh"
build=${1:?usage: test-python-asan.sh BUILD}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cc=${CC:-cc}
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

asan=$("$cc" -print-file-name=libasan.so)
if [ ! -e "$asan" ]; then
    echo "test-python-asan: $cc has no libasan.so to preload" >&2
    exit 1
fi
cd "$root" || exit 1
if [ ! -e build/asan/libamq.a ]; then
    echo "test-python-asan: no build/asan/libamq.a (make BUILD=build/asan SAN=1 build/asan/libamq.a)" >&2
    exit 1
fi
AMQ_BUILD_DIR=build/asan AMQ_EXTRA_CFLAGS="$san" \
    /usr/bin/python3 python/buildtool/amq_build.py --inplace build/asan/python >/dev/null || exit 1

tmp=$(mktemp -d /tmp/amq-python-asan.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "test-python-asan: build/asan/python, $asan preloaded"
status=0
(cd python/tests &&
    LD_PRELOAD="$asan" PYTHONMALLOC=malloc \
    ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$tmp/asan" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    AMQ_BIN="$root/$build/amq" AMQ_BUILD_DIR="$root/$build" PYTHONPATH="$root/build/asan/python" \
    AMQ_PYTHON_SANITIZED=1 \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider --capture=sys .) || status=1
sanitizer_verdict test-python-asan $status "$tmp"
