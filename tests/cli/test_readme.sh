#!/bin/sh
# test_readme.sh - the README's tool block, as written, top to bottom, in a
# temporary directory that holds only the text files it names: every
# command must succeed (sh -e).
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

CASE=readme-tool-block
awk '/^## The tool/ { in_section = 1 }
     in_section && /^```sh$/ { in_block = 1; next }
     in_block && /^```$/ { exit }
     in_block { print }' "$REPO/README.md" >block.sh
[ -s block.sh ] || fail "no sh block under '## The tool' in README.md"
grep -q '^amq ' block.sh || fail "the block runs no amq command"

# The inputs the block names.
seq -f '+1555%07g' 1 200000 >known.txt
seq -f '+1555%07g' 190001 210000 >new.txt
seq -f 'id-%g' 1 5000 >ids.txt
head -n 100 ids.txt >revoked.txt
seq -f 'user%g' 1 30000 | gzip >users.txt.gz
seq -f 'm%g' 1 1000 >monday.txt
seq -f 't%g' 1 1000 >tuesday.txt
{ seq -f 'name%g' 1 3000; seq -f 'name%g' 1 2000; } >names.txt
seq -f 'e%g@example.com' 1 5000 | zstd -q >emails.txt.zst

mkdir bin
ln -s "$AMQ" bin/amq
PATH="$T/bin:$PATH" sh -e block.sh >block.out 2>block.err
st=$?
expect_eq "the README block's exit status (stderr: $(tail -n 3 block.err))" 0 "$st"
# What the comments promise.
grep -q '^248bfa47$' block.out || fail "amq hash --algo murmur3_32 hello is not 248bfa47"
"$AMQ" info ids.amq >ids.info
grep -q '^fingerprint bits: *10$' ids.info || fail "cuckoo --capacity 1M: $(cat ids.info)"
grep -q '^bucket size: *4$' ids.info || fail "cuckoo --capacity 1M: $(cat ids.info)"
size=$(stat -c %s phones.amq)
[ "$size" -gt 5900000 ] && [ "$size" -lt 6100000 ] || fail "phones.amq is $size bytes, not 5.7 MiB"
expect_eq "dedup = awk" "$(awk '!seen[$0]++' names.txt | cmp - unique.txt && echo same)" same
expect_eq "Guava round trip" 5000 "$("$AMQ" query -c emails2.amq emails.txt.zst)"

CASE=every-option-described
# "amq <command> --help and man amq describe every option": every option of every parser
# (amq CMD --list-options, the table completion offers) is in its --help and its man page
# paragraph (or, shared, in DESCRIPTION).  The man page lacked --window, --rate, --partitions,
# --now, --invert, --count.
/usr/bin/python3 - "$AMQ" "$REPO/docs/amq.1" >opts.txt 2>&1 <<'PY' || fail "$(cat opts.txt)"
import re, subprocess, sys
amq, man = sys.argv[1], sys.argv[2]
text = open(man).read()
# The options every command that has them shares (--progress, -q/--quiet, --json) are
# described once, in DESCRIPTION; the others in their command's paragraph, from ".TP" and
# its synopsis ("amq CMD ...", "amq export --to redis --shards ...") to the next one.
desc = text[text.index(".SH DESCRIPTION"):text.index(".SH COMMANDS")]
heads = list(re.finditer(r'^\.TP\n\.BI? "amq (\w+)((?: \\-\\-(?:from|to) \w+)?(?: \\-\\-shards)?)',
                         text, re.M))
sections = {}
for i, m in enumerate(heads):
    end = heads[i + 1].start() if i + 1 < len(heads) else text.index(".SH EXIT STATUS")
    key = (m.group(1) + m.group(2).replace('\\-', '-')).strip()
    sections[key] = sections.get(key, '') + text[m.start():end]
ctxs = ["create", "add", "remove", "query", "info", "build", "merge", "dedup", "hash",
        "import --from guava", "import --from redis", "import --from redis --shards",
        "export --to guava", "export --to redis", "export --to redis --shards"]
def has(opt, t, escaped):
    o = opt.replace('-', '\\-') if escaped else opt
    return re.search(r'(?<![\w\\-])' + re.escape(o) + r'(?![\w-])', t) is not None
bad = []
for ctx in ctxs:
    words = ctx.split() + (["2"] if ctx.endswith("--shards") else [])
    table = subprocess.run([amq, words[0], "--list-options"] + words[1:], capture_output=True,
                           text=True).stdout.split("\n")
    helptext = subprocess.run([amq] + words + ["--help"], capture_output=True, text=True).stdout
    if "--help" not in table:
        bad.append("amq %s --list-options: no table" % ctx)
    # a redis paragraph goes on in its --shards one (--shards switches to that parser)
    sec = "".join(v for k, v in sections.items() if k == ctx or k.startswith(ctx + " "))
    if not sec:
        bad.append("no man page paragraph for 'amq %s'" % ctx)
    for line in table:
        opt = line.split(" ")[0]
        if opt in ("", "--help", "-h"):
            continue
        if not has(opt, sec, True) and not has(opt, desc, True):
            bad.append("the man page, amq %s: %s" % (ctx, opt))
        if not has(opt, helptext, False):
            bad.append("amq %s --help: %s" % (ctx, opt))
if bad:
    print("options not described:\n  " + "\n  ".join(bad))
    sys.exit(1)
PY

CASE=stable-api-count
# The number of stable functions README.md and docs/api.md state is the headers' (README said
# 95 while check-exports.sh counted 96).
n=$(sh "$REPO/scripts/check-exports.sh" --stable-count "$REPO/include")
[ "$n" -gt 0 ] || fail "check-exports.sh --stable-count printed '$n'"
grep -q "The stable API is $n functions" "$REPO/README.md" ||
    fail "README.md: $(grep -o 'The stable API is [0-9]* functions' "$REPO/README.md"), the headers $n"
grep -q "^## The stable API ($n functions)" "$REPO/docs/api.md" ||
    fail "docs/api.md: $(grep '^## The stable API' "$REPO/docs/api.md"), the headers $n"

CASE=static-figures
# The bits per key README.md gives the static kinds are what a build of a million keys takes
# (it gave Ribbon 7.04 at 1 %, its size at RocksDB's rate; at 1 % it is 6.95).
seq 1 1000000 >million
intro=$(sed -n '1,/^## /p' "$REPO/README.md" | tr '\n' ' ')
for kind in fuse ribbon; do
    case $kind in
    fuse) said=$(echo "$intro" | sed -n 's/.*binary fuse (\([0-9.]*\) bits per key.*/\1/p') ;;
    ribbon) said=$(echo "$intro" | sed -n 's/.*Ribbon (\([0-9.]*\) bits per key at 1 %.*/\1/p') ;;
    esac
    "$AMQ" build "m-$kind.amq" million --type "$kind" -q
    got=$("$AMQ" info --json "m-$kind.amq" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["bits_per_item"])')
    checks=$((checks + 1))
    /usr/bin/python3 -c "import sys; sys.exit(0 if '$said' and abs(float('$said') - $got) <= 0.01 * $got else 1)" ||
        fail "README.md gives $kind '$said' bits per key; a build of 1M keys takes $got"
done

CASE=fuzz-targets-described
# docs/reliability.md's table names every fuzz target (it lacked the fuse, ribbon and
# expandable payloads and the module's AMQ.* RDB loader).
for f in "$REPO"/fuzz/fuzz_*.c; do
    t=$(basename "$f" .c)
    checks=$((checks + 1))
    grep -q "\`$t\`" "$REPO/docs/reliability.md" || fail "docs/reliability.md does not name $t"
done

finish
