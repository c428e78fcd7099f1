#!/bin/sh
# check-headers.sh [CC] - every public header compiles alone, as the first
# and only include of a C11 file, warning-free; <amq/advanced.h> only with
# AMQ_ADVANCED_API defined (and refuses without it), as amq/fuse_view.h.
set -e
cc=${1:-${CC:-cc}}
flags="-std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wstrict-prototypes -Werror -Iinclude"
n=0
for h in include/amq.h include/amq/*.h; do
    name=${h#include/}
    def=
    case $name in amq/advanced.h | amq/fuse_view.h) def=-DAMQ_ADVANCED_API ;; esac
    printf '#include <%s>\nint amq_header_check_%s;\n' "$name" "$n" |
        $cc $flags $def -fsyntax-only -x c - || { echo "check-headers: $name does not compile alone" >&2; exit 1; }
    n=$((n + 1))
done
if printf '#include <amq/advanced.h>\n' | $cc $flags -fsyntax-only -x c - 2>/dev/null; then
    echo "check-headers: amq/advanced.h compiles without AMQ_ADVANCED_API" >&2
    exit 1
fi
# A renamed stable name still compiles, with a deprecation warning that
# names the new one (amq/compat.h): an error under -Werror, silent without
# the warning.
old='#include <amq.h>
int f(amq_bloom *b, size_t *n);
int f(amq_bloom *b, size_t *n) { return amq_guava_encoded_size(b, n, NULL); }'
if printf '%s\n' "$old" | $cc $flags -fsyntax-only -x c - 2>/dev/null; then
    echo "check-headers: amq_guava_encoded_size is not marked deprecated" >&2
    exit 1
fi
printf '%s\n' "$old" | $cc $flags -Wno-deprecated-declarations -fsyntax-only -x c - ||
    { echo "check-headers: the deprecated old names do not compile" >&2; exit 1; }
echo "headers: $n public headers compile alone ($cc); old names deprecated"
