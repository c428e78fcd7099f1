#!/bin/sh
# test_dedup.sh - amq dedup gives exactly the output of awk '!seen[$0]++'
# (edge cases, random inputs with fixed seeds, files, pipes, gzip, several
# inputs), --approximate, --stats, -o, progress, errors.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

# same_as_awk NAME OPTIONS FILE... : amq dedup OPTIONS FILE... against
# awk '!seen[$0]++' FILE...
same_as_awk() {
    name=$1
    opts=$2
    shift 2
    checks=$((checks + 1))
    awk '!seen[$0]++' "$@" >"$name.awk"
    # shellcheck disable=SC2086
    "$AMQ" dedup $opts "$@" >"$name.amq" 2>"$name.err" || { fail "$name: amq dedup exited $?: $(head -c 300 "$name.err")"; return; }
    cmp -s "$name.awk" "$name.amq" || fail "$name: amq dedup $opts $* differs from awk"
}

CASE=edge-cases
: >empty
printf '\n' >one-empty
printf '\n\n\n' >empties
printf 'a\nb\na' >no-final-newline
printf 'a' >just-a
printf 'a\r\na\na\r\n\r\n\r\n\n' >crlf
printf 'a\0b\na\0c\na\0b\n\0\n\0\n' >nul
printf '\200\377\376\nabc\n\200\377\376\n\377\n' >binary
printf 'ab\na\nabc\nab\n\nabc\na\n' >prefixes
printf 'x\n\r\nx\r\n\r\nx\n' >cr-only
for f in empty one-empty empties no-final-newline just-a crlf nul binary prefixes cr-only; do
    same_as_awk "$f" "" "$f"
    same_as_awk "$f-threads1" "--threads 1" "$f"
done
expect_eq "empty input, empty output" "" "$("$AMQ" dedup empty)"
expect_eq "a final newline is added" "$(printf 'a\nb')" "$("$AMQ" dedup no-final-newline)"
expect_eq "no-final-newline bytes" 4 "$("$AMQ" dedup no-final-newline | wc -c | tr -d ' ')"

CASE=long-lines
# Lines of 1 MiB: twice the same, one differing in its last byte, one in its
# first, a prefix of it.
/usr/bin/python3 - <<'PY'
big = b"q" * (1 << 20)
lines = [big, big[:-1] + b"r", big, b"r" + big[1:], big[:-1], big, b"short", big[:-1]]
open("long", "wb").write(b"\n".join(lines) + b"\n")
PY
same_as_awk long "" long
same_as_awk long-threads1 "--threads 1" long
expect_eq "1 MiB lines kept" 5 "$("$AMQ" dedup long | wc -l | tr -d ' ')"

CASE=random-inputs
# Fixed seeds; vocabularies small enough for many duplicates, with empty
# lines, CRs, NULs and high bytes, with and without a final newline.
/usr/bin/python3 - <<'PY'
import random
for seed, nvocab, nlines in ((1, 50, 60000), (2, 3000, 1000), (3, 40000, 150000),
                             (4, 3000, 60000)):
    r = random.Random(seed)
    vocab = []
    for i in range(nvocab):
        n = r.choice([0, 1, 2, 5, 13, 40, 200])
        vocab.append(bytes(r.choice(b"ab\r\0\x80\xffxyz") for _ in range(n)))
    lines = [r.choice(vocab) for _ in range(nlines)]
    data = b"\n".join(lines)
    if seed % 2:
        data += b"\n"
    open(f"rand{seed}", "wb").write(data)
PY
for s in 1 2 3 4; do
    same_as_awk "rand$s" "" "rand$s"
    same_as_awk "rand$s-t1" "--threads 1" "rand$s"
    same_as_awk "rand$s-t3" "--threads 3" "rand$s"
done
same_as_awk rand-t16 "--threads 16" rand3 rand4
same_as_awk rand-multi "" rand1 rand2 rand3 rand4
same_as_awk rand-repeat "" rand3 rand3
# Files without a final newline: each file's last line ends at its end.
printf 'a' >fa
printf 'a\nb' >fb
same_as_awk no-newline-files "" fa fb fa

CASE=collisions
# 8-bit keys: different lines share keys; the byte-by-byte check decides.
for s in 1 3 4; do
    awk '!seen[$0]++' "rand$s" >want
    AMQ_DEDUP_KEY_BITS=8 "$AMQ" dedup "rand$s" >got
    expect_same_file want got
    AMQ_DEDUP_KEY_BITS=8 "$AMQ" dedup --threads 3 "rand$s" >got
    expect_same_file want got
done
awk '!seen[$0]++' rand1 rand2 rand4 >want
AMQ_DEDUP_KEY_BITS=4 "$AMQ" dedup --threads 1 rand1 rand2 rand4 >got
expect_same_file want got

CASE=pipes-and-stdin
awk '!seen[$0]++' rand2 >want
cat rand2 | "$AMQ" dedup >got
expect_same_file want got
"$AMQ" dedup <rand2 >got
expect_same_file want got
cat rand2 | "$AMQ" dedup - >got
expect_same_file want got
awk '!seen[$0]++' rand1 rand2 rand3 >want
cat rand2 | "$AMQ" dedup rand1 - rand3 >got
expect_same_file want got
# stdin redirected from a file, read from where it was left
awk '!seen[$0]++' fb >want
(printf 'skip\n'; cat rand1) >skipped
{ read -r _skip; "$AMQ" dedup; } <skipped >got
awk '!seen[$0]++' rand1 >want
expect_same_file want got
# the temporary copy of a pipe goes to TMPDIR and is gone afterwards
mkdir spill
cat rand2 | TMPDIR="$T/spill" "$AMQ" dedup >/dev/null
expect_eq "no temporary file left" "" "$(ls spill)"

CASE=gzip
awk '!seen[$0]++' rand1 >want
gzip -c rand1 >rand1.gz
"$AMQ" dedup rand1.gz >got
expect_same_file want got
cat rand1.gz | "$AMQ" dedup >got
expect_same_file want got
# concatenated members are one stream
gzip -c fa >fa.gz
gzip -c fb >fb.gz
cat fa.gz fb.gz >fab.gz
expect_eq "concatenated gzip members" "$(printf 'aa\nb' | awk '!seen[$0]++')" "$("$AMQ" dedup fab.gz)"
awk '!seen[$0]++' rand1 rand3 >want
gzip -c rand3 >rand3.gz
"$AMQ" dedup rand1.gz rand3.gz >got
expect_same_file want got
# a file that only starts like gzip is plain text
printf '\037\n\037\n' >not-gz
same_as_awk not-gz "" not-gz
# damaged gzip
size=$(wc -c <rand1.gz)
head -c $((size / 2)) rand1.gz >trunc.gz
expect_status 2 "$AMQ" dedup trunc.gz
expect_stderr_has "trunc.gz: truncated gzip data"
expect_status 2 sh -c "cat trunc.gz | '$AMQ' dedup"
expect_stderr_has "truncated gzip data"
head -c 12 rand1.gz >tiny.gz
expect_status 2 "$AMQ" dedup tiny.gz
expect_stderr_has "truncated"
cp rand1.gz corrupt.gz
printf 'XXXXXXXXXXXXXXXX' | dd of=corrupt.gz bs=1 seek=100 conv=notrunc 2>/dev/null
expect_status 2 "$AMQ" dedup corrupt.gz
expect_stderr_has "corrupt.gz"
(cat rand1.gz; printf 'garbage') >trailing.gz
expect_status 2 "$AMQ" dedup trailing.gz
expect_stderr_has "trailing bytes after the gzip data"

CASE=output-file
awk '!seen[$0]++' rand3 >want
expect_status 0 "$AMQ" dedup rand3 -o out.txt
expect_same_file want out.txt
expect_eq "nothing on stdout with -o" "" "$(cat "$T/.out")"
cp out.txt before.txt
expect_status 2 "$AMQ" dedup rand1 no-such-file -o out.txt
expect_same_file before.txt out.txt
expect_stderr_has "no-such-file"
expect_eq "no temporary output left" "" "$(ls -a | grep amq-dedup)"
# the output may be one of the inputs (written aside, renamed at the end)
cp rand3 inplace
"$AMQ" dedup inplace -o inplace
expect_same_file want inplace

CASE=stats
"$AMQ" dedup --stats rand2 >/dev/null 2>stats.txt
in=$(awk 'END { print NR }' rand2)
out=$(awk '!seen[$0]++' rand2 | wc -l | tr -d ' ')
grep -q "^lines in: *$in$" stats.txt || fail "stats lines in ($in): $(cat stats.txt)"
grep -q "^distinct out: *$out$" stats.txt || fail "stats distinct out ($out): $(cat stats.txt)"
grep -q "^duplicates: *$((in - out))$" stats.txt || fail "stats duplicates: $(cat stats.txt)"
grep -q "^flagged: " stats.txt || fail "stats flagged: $(cat stats.txt)"
grep -q "^filter: *[a-z]*, [0-9]* bytes" stats.txt || fail "stats filter: $(cat stats.txt)"
grep -q "^peak memory: *[0-9]* bytes" stats.txt || fail "stats memory: $(cat stats.txt)"

CASE=approximate
# A lenient filter drops only duplicates and a few distinct lines, and says
# how many to expect; a strict one on a small input loses nothing.
awk '!seen[$0]++' rand3 >want
"$AMQ" dedup --approximate --fpp 1e-9 rand3 >got 2>note.txt
expect_same_file want got
grep -q "expected number of distinct lines among them wrongly dropped" note.txt ||
    fail "no expected-loss note: $(cat note.txt)"
/usr/bin/python3 - <<'PY' >approx.txt
import random
r = random.Random(9)
print("\n".join(str(r.randrange(30000)) for _ in range(60000)))
PY
awk '!seen[$0]++' approx.txt >want
"$AMQ" dedup --approximate --fpp 0.2 --capacity 30000 approx.txt >got 2>note.txt
lost=$(($(wc -l <want) - $(wc -l <got)))
exp=$(sed -n 's/.*wrongly dropped (false positives): \([0-9.e+]*\).*/\1/p' note.txt)
# every printed line is a first occurrence, in order
awk 'NR == FNR { first[$0] = 1; next } !($0 in first) { bad = 1 } END { exit bad }' want got ||
    fail "approximate output has a line that is not in awk's"
[ "$(sort got | uniq -d | wc -l)" -eq 0 ] || fail "approximate output has duplicates"
/usr/bin/python3 -c "
import sys
lost, exp = $lost, float('$exp')
# the expected loss is a mean; the count is near it (Poisson-like spread)
sys.exit(0 if exp > 100 and abs(lost - exp) < 5 * exp ** 0.5 + 0.1 * exp else 1)
" || fail "approximate: $lost lines lost, $exp expected"
# Past its capacity the filter saturates and keeps nothing more: the estimate counts the
# distinct lines offered, not the kept ones (it said 53 lost of 49,894).
seq 1 50000 >sat.txt
"$AMQ" dedup --approximate --capacity 5 --stats --json sat.txt >got 2>note.txt
lost=$((50000 - $(wc -l <got)))
/usr/bin/python3 - "$lost" note.txt <<'PY' || fail "saturated: $(cat note.txt)"
import json, sys
lost = int(sys.argv[1])
text = open(sys.argv[2]).read()
# --json: standard error is the one object, the warnings its list (a warning line before it
# broke a reader of the object)
d = json.loads(text)
assert abs(d["expected_false_drops"] - lost) < 0.02 * 50000, (d["expected_false_drops"], lost)
assert abs(d["distinct_in_estimate"] - 50000) < 0.02 * 50000, d["distinct_in_estimate"]
w = "about %d distinct lines in (a HyperLogLog estimate; %d kept), over the filter's capacity of 5"
assert len(d["warnings"]) == 1 and w % (round(d["distinct_in_estimate"]), 50000 - lost) in d["warnings"][0], d
PY
"$AMQ" dedup --approximate --capacity 5 sat.txt >got 2>note.txt
grep -q "about [0-9]* distinct lines in (a HyperLogLog estimate; $((50000 - lost)) kept), over the filter's capacity of 5" note.txt ||
    fail "saturated warning: $(cat note.txt)"
# A pipe's growing filter is the scalable Bloom filter the library makes for --fpp: its first
# link at a fifth of the rate (the tool's own fifth on top made it 25 times tighter).
"$AMQ" create sbx.amq --type scalable-bloom --capacity 1000000 --fpp 0.01
cat approx.txt | "$AMQ" dedup --approximate --fpp 0.01 --stats --json >/dev/null 2>note.txt
expect_eq "a pipe's filter: the library's for --fpp 0.01" \
    "$("$AMQ" info --json sbx.amq | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes"])')" \
    "$(/usr/bin/python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["filter_bytes"])' note.txt)"
# Past the first link (1M lines) the pipe's rate stays at the full link's while the next fills:
# the expected loss followed it (it said about 850 for 1,315 lost).
seq 1 1500000 | "$AMQ" dedup --approximate --fpp 0.01 --stats --json >got 2>note.txt
lost=$((1500000 - $(wc -l <got)))
/usr/bin/python3 - "$lost" note.txt <<'PY' || fail "a pipe past its first link: $lost lost; $(tail -1 note.txt)"
import json, sys
lost = int(sys.argv[1])
exp = json.loads(open(sys.argv[2]).read().splitlines()[-1])["expected_false_drops"]
sys.exit(0 if lost > 500 and abs(lost - exp) < 5 * exp ** 0.5 + 0.1 * exp else 1)
PY
cat approx.txt | "$AMQ" dedup --approximate --quiet --fpp 1e-9 >got 2>note.txt
expect_eq "--quiet silences the note" "" "$(cat note.txt)"
expect_same_file want got
mkfifo fifo
(cat approx.txt >fifo &)
"$AMQ" dedup --approximate --fpp 1e-9 fifo >got 2>note.txt
expect_same_file want got
(cat approx.txt >fifo &)
"$AMQ" dedup fifo >got
expect_same_file want got

CASE=progress
AMQ_PROGRESS_DELAY=0 "$AMQ" dedup --progress rand2 >/dev/null 2>prog.txt
grep -q "dedup pass 1 of 2" prog.txt || fail "no progress with --progress: $(cat prog.txt)"
AMQ_PROGRESS_DELAY=0 "$AMQ" dedup rand2 >/dev/null 2>prog.txt
expect_eq "no progress when stderr is not a terminal" "" "$(cat prog.txt)"
AMQ_PROGRESS_DELAY=0 "$AMQ" dedup --progress --quiet rand2 >/dev/null 2>prog.txt
expect_eq "--quiet wins" "" "$(cat prog.txt)"

CASE=errors
expect_status 2 "$AMQ" dedup no-such-file
expect_stderr_has "no-such-file: No such file or directory"
expect_status 2 "$AMQ" dedup .
expect_stderr_has "is a directory"
expect_status 2 "$AMQ" dedup --fpp 0 rand1
expect_stderr_has "--fpp"
expect_status 2 "$AMQ" dedup --fpp 1.5 rand1
expect_status 2 "$AMQ" dedup --capacity 0 rand1
expect_status 2 "$AMQ" dedup --threads 0 rand1
expect_status 2 "$AMQ" dedup --frobnicate
expect_status 2 "$AMQ" dedup rand1 -o /nonexistent-dir/out
expect_stderr_has "/nonexistent-dir/out"
expect_status 0 "$AMQ" dedup --help
expect_status 0 "$AMQ" help dedup

finish
