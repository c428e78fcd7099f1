#!/bin/sh
# guava.sh AMQ - amq's Guava interoperability against a real Guava (Debian's
# libguava-java): filters written by Guava are imported and queried by amq,
# filters built by amq are exported and read by Guava, and both sides must
# give identical answers for present and absent keys (false positives
# included) and identical bytes for the same keys and sizing.
# Skipped (exit 0 with a note) when javac or guava.jar is missing.
AMQ=${1:?usage: guava.sh AMQ}
case "$AMQ" in /*) ;; *) AMQ="$PWD/$AMQ" ;; esac
GUAVA_JAR=${GUAVA_JAR:-/usr/share/java/guava.jar}
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v javac >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1 ||
    [ ! -r "$GUAVA_JAR" ]; then
    echo "guava.sh: skipped (no JDK or no $GUAVA_JAR)"
    exit 0
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/amq-guava-XXXXXX")
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
failures=0
checks=0
fail() { failures=$((failures + 1)); echo "  FAIL: $*" >&2; }
check() { checks=$((checks + 1)); "$@" || fail "$*"; }

javac -d classes -cp "$GUAVA_JAR" "$here/GuavaInterop.java" || { echo "guava.sh: javac failed" >&2; exit 1; }
J() { java -cp "classes:$GUAVA_JAR" GuavaInterop "$@"; }

# Keys: ASCII, multibyte UTF-8 (2, 3 and 4 bytes), empty-ish and long ones.
/usr/bin/python3 - <<'PY'
import random
r = random.Random(20240611)
words = ["na\u00efve", "\u65e5\u672c\u8a9e", "\U0001F600smile", "caf\u00e9", "\u00fcber"]
present = [f"user-{i}" for i in range(3000)] + [w + str(i) for i in range(200) for w in words]
present += ["x" * 1000, "a", "ab", "abc"]
absent = [f"user-{i}" for i in range(3000, 40000)] + [w + str(i) for i in range(200, 2200) for w in words]
open("present.txt", "w", encoding="utf-8").write("\n".join(present) + "\n")
open("absent.txt", "w", encoding="utf-8").write("\n".join(absent) + "\n")
PY
cat present.txt absent.txt >all.txt
n=$(wc -l <present.txt)

# 1. Guava writes, amq imports and answers exactly as Guava does.
for spec in "$n 0.03" "500 0.1" "$n 0.001"; do
    set -- $spec
    J write g.bin "$1" "$2" present.txt
    check "$AMQ" import --from guava g.bin g.amq --force
    J query g.bin all.txt >java.out
    "$AMQ" query g.amq all.txt >amq.out
    check cmp -s java.out amq.out
    # every present key, and (for the over-full 500-key filter) many false positives
    check test "$(grep -cxFf present.txt amq.out)" = "$n"
    # the round trip is the identity on the bytes
    check "$AMQ" export --to guava g.amq back.bin --force
    check cmp -s g.bin back.bin
done

# 2. amq builds a filter in Guava's layout: byte-identical to Guava's for the
# same keys and sizing, and Guava answers as amq does.
for spec in "$n 0.03" "100000 0.01" "1 0.5" "0 0.2" "12345 0.0001"; do
    set -- $spec
    J write g.bin "$1" "$2" present.txt
    if [ "$1" = 0 ]; then cap=1; else cap=$1; fi
    # (capacities 1 and 0 are over-full on purpose, as Guava lets them be)
    check "$AMQ" build a.amq present.txt --guava --capacity "$cap" --fpp "$2" --force \
        --allow-overfill
    check "$AMQ" export --to guava a.amq a.bin --force
    check cmp -s g.bin a.bin
    J query a.bin all.txt >java.out
    "$AMQ" query a.amq all.txt >amq.out
    check cmp -s java.out amq.out
done

# 3. Empty filters: Guava's sizing for n = 1e6, p = 0.01 is the issue's
# vector: 1,198,142 bytes starting 01 07 00 02 49 07.
: >empty.txt
J write g.bin 1000000 0.01 empty.txt
check test "$(wc -c <g.bin)" = 1198142
check test "$(od -An -tx1 -N6 g.bin | tr -d ' \n')" = 010700024907
check "$AMQ" build e.amq empty.txt --guava --capacity 1000000 --fpp 0.01 --force
check "$AMQ" export --to guava e.amq e.bin --force
check cmp -s g.bin e.bin
echo key0 >key0.txt
J write g.bin 1000000 0.01 key0.txt
check "$AMQ" import --from guava g.bin k.amq --force
check test "$("$AMQ" query -c k.amq key0.txt)" = 1

if [ "$failures" -ne 0 ]; then
    echo "guava.sh: $failures of $checks checks failed" >&2
    exit 1
fi
echo "guava.sh: $checks checks passed (against $(basename "$(readlink -f "$GUAVA_JAR")"))"
