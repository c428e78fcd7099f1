#!/bin/sh
# test_conventions.sh - issue 19, "conventions": a progress line that fits
# the terminal, one meaning of -q/--quiet/--progress, "amq:" on every error
# (getopt's too) without a usage dump, --version everywhere, grep's way
# with a missing input, --json for the statistics, shell completion, and
# docs that point only inside the repository.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

seq 1 20000 >keys
seq 20001 20100 >other

CASE=progress-fits-the-terminal
seq 1 2000000 >big
# A pseudo-terminal of the given width on standard error; prints what the
# command wrote to it.
cat >ptyrun.py <<'PY'
import fcntl, os, pty, struct, sys, termios
cols = int(sys.argv[1])
pid, fd = pty.fork()
if pid == 0:
    # The size is set before the command starts: it reads it at once.
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack('HHHH', 24, cols, 0, 0))
    os.execvp(sys.argv[2], sys.argv[2:])
out = b''
while True:
    try:
        d = os.read(fd, 65536)
    except OSError:
        break
    if not d:
        break
    out += d
os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
PY
for cols in 80 50; do
    AMQ_PROGRESS_DELAY=0 /usr/bin/python3 ptyrun.py $cols "$AMQ" build p.amq big --force \
        --threads 1 >pty.out
    AMQ_PROGRESS_DELAY=0 /usr/bin/python3 ptyrun.py $cols "$AMQ" dedup big -o /dev/null \
        --threads 1 >>pty.out
    grep -q 'amq: build' pty.out || fail "no progress line drawn on a $cols-column terminal"
    widest=$(/usr/bin/python3 -c '
import re, sys
data = open("pty.out", "rb").read().decode("utf-8", "replace")
data = re.sub(r"\x1b\[K", "", data)
print(max(len(s) for s in re.split(r"[\r\n]", data)))')
    [ "$widest" -lt "$cols" ] || fail "a progress line of $widest columns on a $cols-column terminal: $(tr "\r" "\n" <pty.out | awk -v w="$widest" "length(\$0) >= w" | head -n 1)"
    nl=$(tr -cd '\n' <pty.out | wc -c)
    # No line feed while redrawing (pty turns LF into CRLF: count them).
    [ "$nl" -eq 0 ] || fail "$nl line feeds: the progress line scrolled"
done

CASE=quiet-and-progress-everywhere
"$AMQ" create q.amq --capacity 100000 >/dev/null
"$AMQ" create qc.amq --type cuckoo --capacity 100000 >/dev/null
for cmd in "add q.amq keys" "add qc.amq keys" "remove qc.amq keys" "query -c q.amq keys" \
    "build qb.amq keys --force" "dedup keys -o /dev/null"; do
    # shellcheck disable=SC2086
    expect_status 0 "$AMQ" $cmd -q
    expect_eq "'$cmd -q': standard error" "" "$(cat "$T/.err")"
    # shellcheck disable=SC2086
    expect_status 0 "$AMQ" $cmd --quiet
    # shellcheck disable=SC2086
    AMQ_PROGRESS_DELAY=0 "$AMQ" $cmd --progress >/dev/null 2>prog.err
    grep -q '^amq: ' prog.err || fail "'$cmd --progress' showed no progress"
done

CASE=errors-prefixed-no-usage-dump
for cmd in create add remove query info build merge dedup import export hash; do
    expect_status 2 "$AMQ" $cmd --no-such-option
    expect_stderr_has "amq: unrecognized option '--no-such-option'"
    expect_stderr_has "amq: try 'amq $cmd --help'"
    n=$(wc -l <"$T/.err")
    [ "$n" -le 2 ] || fail "$cmd: $n lines on a bad option (usage dumped?)"
    grep -v '^amq: ' "$T/.err" >/dev/null && fail "$cmd: an error line without 'amq: '"
done
expect_status 2 "$AMQ" dedup -o
expect_stderr_has "amq: option requires an argument -- 'o'"

CASE=version-everywhere
for cmd in create add remove query info build merge dedup import export hash; do
    expect_status 0 "$AMQ" $cmd --version
    grep -q '^amq [0-9]' "$T/.out" || fail "$cmd --version: $(cat "$T/.out")"
done

CASE=missing-input-like-grep
"$AMQ" create g.amq --capacity 1000 >/dev/null
seq 1 10 | "$AMQ" add g.amq
expect_status 2 "$AMQ" query -c g.amq missing keys
expect_eq "-c still prints" 10 "$(cat "$T/.out")"
expect_stderr_has "amq: missing: No such file or directory"
expect_status 2 "$AMQ" query g.amq keys missing other
expect_eq "lines of the inputs after the missing one" 10 "$(wc -l <"$T/.out")"
expect_status 2 "$AMQ" query g.amq missing other
expect_eq "nothing selected, still an error" "" "$(cat "$T/.out")"
expect_status 0 "$AMQ" query -q g.amq missing keys

CASE=json
json_ok() { /usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if sys.argv[2] in d else 1)' "$@"; }
"$AMQ" create j.amq --capacity 100000 >/dev/null
"$AMQ" add --stats --json j.amq keys 2>j.json
json_ok j.json keys_new || fail "add --stats --json: $(cat j.json)"
"$AMQ" create jc.amq --type cuckoo --capacity 100000 >/dev/null
"$AMQ" add jc.amq keys
"$AMQ" remove --stats --json jc.amq other 2>j.json
json_ok j.json removed || fail "remove --stats --json: $(cat j.json)"
"$AMQ" build --stats --json jb.amq keys 2>j.json
json_ok j.json distinct_keys || fail "build --stats --json: $(cat j.json)"
"$AMQ" dedup --stats --json keys >/dev/null 2>j.json
json_ok j.json distinct_out || fail "dedup --stats --json: $(cat j.json)"
"$AMQ" info --json j.amq >j.json
json_ok j.json fpp_now || fail "info --json: $(cat j.json)"
# --json without --stats was accepted and printed nothing: it implies --stats
"$AMQ" add --json j.amq keys 2>j.json
json_ok j.json keys_new || fail "add --json: $(cat j.json)"
"$AMQ" remove --json jc.amq other 2>j.json
json_ok j.json removed || fail "remove --json: $(cat j.json)"
"$AMQ" build --json jb2.amq keys 2>j.json
json_ok j.json distinct_keys || fail "build --json: $(cat j.json)"
"$AMQ" dedup --json keys >/dev/null 2>j.json
json_ok j.json distinct_out || fail "dedup --json: $(cat j.json)"

CASE=completion
PATH_OK=$(PATH="$(dirname "$AMQ"):$PATH" bash -c ". '$REPO/completions/amq.bash'
COMP_WORDS=(amq ad); COMP_CWORD=1; _amq; echo \"\${COMPREPLY[*]}\"
COMP_WORDS=(amq add --allow); COMP_CWORD=2; _amq; echo \"\${COMPREPLY[*]}\"
COMP_WORDS=(amq create f --type scal); COMP_CWORD=4; _amq; echo \"\${COMPREPLY[*]}\"")
expect_eq "bash completion" "add
--allow-overfill
scalable-bloom scalable-cuckoo" "$PATH_OK"
if command -v zsh >/dev/null; then
    zsh -n "$REPO/completions/_amq" || fail "_amq: zsh syntax error"
else
    fail "zsh is not installed (TEST_DEPS)"
fi
make -s -n -C "$REPO" install DESTDIR=/nonexistent PREFIX=/usr 2>/dev/null >inst.txt
grep -q 'completions/amq.bash.*/nonexistent/usr/share/bash-completion/completions/amq' inst.txt ||
    fail "make install does not install the bash completion"
grep -q '_amq.*/nonexistent/usr/share/zsh/site-functions/_amq' inst.txt ||
    fail "make install does not install the zsh completion"

CASE=help-topic
# 'amq help X' takes a command or a list: an unknown X names both (it said "not an amq command").
expect_status 2 "$AMQ" help kind
expect_stderr_has "'kind' is neither a command (see 'amq --help') nor a list (kinds, formats, hashes, algos)"

CASE=lists-from-the-tables
# Issue 45: every list of kinds and formats a user sees comes from the tables
# the code uses (amq help kinds|formats prints them): create's and build's
# --help, amq --help, import/export --help, the man page, the completions.
kinds=$("$AMQ" help kinds)
formats=$("$AMQ" help formats)
expect_eq "kinds listed" yes "$([ "$(echo "$kinds" | wc -l)" -ge 9 ] && echo yes)"
seq 1 100 >lk
for k in $kinds; do
    case $k in aging) extra="--capacity 1000 --window 1000" ;; *) extra="--capacity 1000" ;; esac
    # shellcheck disable=SC2086
    "$AMQ" build --type "$k" lk-$k.amq lk $extra >/dev/null 2>&1 ||
        "$AMQ" build --type "$k" lk-$k.amq lk >/dev/null 2>&1 ||
        fail "'amq help kinds' names '$k', which build does not take"
    for c in create build; do
        "$AMQ" $c --help | tr -c 'a-z-' '\n' | grep -qx -- "$k" || fail "$c --help does not list kind $k"
    done
done
for f in $formats; do
    "$AMQ" --help | grep -E "^  (import|export) " | grep -c "[ ,]$f\b" | grep -qx 2 ||
        fail "amq --help: import and export do not both list format $f"
    "$AMQ" import --help | grep -q -- "--from $f" || fail "import --help lacks --from $f"
    "$AMQ" export --help | grep -q -- "--to $f" || fail "export --help lacks --to $f"
done
# The man page's two --type paragraphs (create, build) name exactly the kinds.
/usr/bin/python3 - "$REPO/docs/amq.1" $kinds <<'PY' >man.txt 2>&1 || fail "man page: $(cat man.txt)"
import re, sys
text = open(sys.argv[1]).read()
kinds = set(sys.argv[2:])
paras = re.findall(r'\.BI \\-\\-type " TYPE"\n(.*?)\n\.TP', text, re.S)
assert len(paras) == 2, "expected the --type paragraphs of create and build, got %d" % len(paras)
for p in paras:
    named = set(re.findall(r'^\.BR? "?([a-z][a-z-]*)', p, re.M)) - {"amq"}
    assert named == kinds, "a --type paragraph names %s, the tool %s" % (sorted(named), sorted(kinds))
PY
got=$(PATH="$(dirname "$AMQ"):$PATH" bash -c ". '$REPO/completions/amq.bash'
COMP_WORDS=(amq build f --type ''); COMP_CWORD=4; _amq; echo \"\${COMPREPLY[*]}\"
COMP_WORDS=(amq import --from ''); COMP_CWORD=3; _amq; echo \"\${COMPREPLY[*]}\"")
expect_eq "bash completion of --type and --from" "$(echo $kinds)
$(echo $formats)" "$got"
# create's --type: the kinds create makes (it offered fuse and ribbon, which it refuses)
got=$(PATH="$(dirname "$AMQ"):$PATH" bash -c ". '$REPO/completions/amq.bash'
COMP_WORDS=(amq create f --type ''); COMP_CWORD=4; _amq; echo \"\${COMPREPLY[*]}\"")
expect_eq "create --type completion" "$("$AMQ" help kinds create | tr "\n" " " | sed "s/ $//")" "$got"
for k in $got; do
    case $k in aging) extra="--window 1000" ;; *) extra="--capacity 1000" ;; esac
    # shellcheck disable=SC2086
    "$AMQ" create ck-$k.amq --type "$k" $extra >/dev/null 2>ck.err ||
        fail "completion offers create --type $k, which create refuses: $(cat ck.err)"
done

CASE=hash-algos-from-the-table
# amq hash's algorithms are listed by its own table (amq help algos) in its --help, its
# error, both completions and the man page (they were written out by hand in each).
algos=$("$AMQ" help algos)
expect_eq "algos listed" yes "$([ "$(echo "$algos" | wc -l)" -ge 6 ] && echo yes)"
for a in $algos; do
    "$AMQ" hash --algo "$a" x >/dev/null 2>&1 || fail "'amq help algos' names '$a', which hash refuses"
    "$AMQ" hash --help | tr -c 'a-z0-9_' '\n' | grep -qx -- "$a" || fail "hash --help does not list $a"
    "$AMQ" hash --algo nope x 2>&1 | tr -c 'a-z0-9_' '\n' | grep -qx -- "$a" ||
        fail "hash's unknown-algorithm error does not list $a"
done
got=$(PATH="$(dirname "$AMQ"):$PATH" bash -c ". '$REPO/completions/amq.bash'
COMP_WORDS=(amq hash --algo ''); COMP_CWORD=3; _amq; echo \"\${COMPREPLY[*]}\"")
expect_eq "bash completion of hash --algo" "$(echo $algos)" "$got"
grep -q 'compadd ${(f)"$(amq help algos' "$REPO/completions/_amq" ||
    fail "zsh completion of --algo does not come from 'amq help algos'"
/usr/bin/python3 - "$REPO/docs/amq.1" $algos <<'PY' >man.txt 2>&1 || fail "man page: $(cat man.txt)"
import re, sys
text = open(sys.argv[1]).read()
para = re.search(r'\.BI "amq hash .*?\n(.*?)\n\.TP', text, re.S).group(1)
para = para[para.index(".I ALGO"):]
named = set(re.findall(r'^\.BR? ([a-z0-9_]+)', para, re.M))
assert named == set(sys.argv[2:]), "amq hash's paragraph names %s, the tool %s" % (sorted(named), sorted(sys.argv[2:]))
PY

CASE=filter-hashes-from-the-table
# A filter's hashes (--hash) are the library's table (amq help hashes): create's and build's
# --help list each one, and the kinds whose default it is; the man page's --hash paragraph and
# docs/file-format.md's table of hash ids name exactly them (the help's lists were written
# out by hand, and a new hash could be missed).
hashes=$("$AMQ" help hashes)
expect_eq "hashes listed" yes "$(echo "$hashes" | grep -qx mulmix && [ "$(echo "$hashes" | wc -l)" -ge 7 ] && echo yes)"
for h in $hashes; do
    for c in create build; do
        "$AMQ" $c --help | sed -n '/--hash ALGO/,/--seed/p' | tr -c 'a-z0-9' '\n' | grep -qx -- "$h" ||
            fail "$c --help does not list hash $h"
    done
    "$AMQ" create hx.amq --type bloom --hash nope 2>&1 | tr -c 'a-z0-9' '\n' | grep -qx -- "$h" ||
        fail "--hash's unknown-algorithm error does not list $h"
done
for c in create build; do
    "$AMQ" $c --help | grep -q "mulmix (cuckoo's default)" || fail "$c --help: cuckoo's default hash"
    "$AMQ" $c --help | grep -q "vmulshift (fuse's default)" || fail "$c --help: fuse's default hash"
done
/usr/bin/python3 - "$REPO/docs/amq.1" "$REPO/docs/file-format.md" $hashes <<'PY' >man.txt 2>&1 || fail "docs: $(cat man.txt)"
import re, sys
text = open(sys.argv[1]).read()
para = re.search(r'\.BI \\-\\-hash " ALGO"\n(.*?)\n\.TP', text, re.S).group(1)
named = set(re.findall(r'^\.BR? ([a-z0-9]+)', para, re.M))
assert named == set(sys.argv[3:]), "the man page's --hash names %s, the tool %s" % (sorted(named), sorted(sys.argv[3:]))
table = open(sys.argv[2]).read().split("## Hash algorithms")[1].split("\n## ")[0]
rows = set(re.findall(r'^\| \d+ \| `([a-z0-9]+)` \|', table, re.M))
assert rows == set(sys.argv[3:]), "file-format.md's hash ids name %s, the tool %s" % (sorted(rows), sorted(sys.argv[3:]))
PY

CASE=completion-offers-what-the-parser-takes
# The options offered are the parser's own table (amq CMD --list-options), in every context
# (import/export per format, with and without --shards), and each one is accepted: used, it
# is never "unrecognized" (they were scraped from the help's prose: build --to, import
# --no-raw, export --guava, ...; export --routing and -v -c -q -o were missed).
cat >ctxs <<'EOF'
create
add
remove
query
info
build
merge
dedup
hash
import --from guava
import --from redis
import --from redis --shards 2
export --to guava
export --to redis
export --to redis --shards 2
EOF
expect_eq "a context for every command" "$("$AMQ" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p' | sort)" \
    "$(cut -d' ' -f1 ctxs | sort -u)"
mkdir sandbox
while read -r cmd rest; do
    # shellcheck disable=SC2086
    offered=$(PATH="$(dirname "$AMQ"):$PATH" bash -c ". '$REPO/completions/amq.bash'
COMP_WORDS=(amq $cmd $rest -); COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1)); _amq
printf '%s\n' \"\${COMPREPLY[@]}\"" | sort)
    # shellcheck disable=SC2086
    table=$("$AMQ" $cmd --list-options $rest)
    expect_eq "$cmd $rest: completion offers the parser's table" \
        "$(echo "$table" | cut -d' ' -f1 | sort)" "$offered"
    for opt in $offered; do
        arg=
        echo "$table" | grep -qx -- "$opt ARG" && arg=1
        # shellcheck disable=SC2086
        (cd sandbox && timeout 20 "$AMQ" $cmd $rest $opt $arg </dev/null >/dev/null 2>../opt.err)
        ! grep -q "unrecognized option\|invalid option\|requires an argument\|ambiguous" opt.err ||
            fail "$cmd $rest: completion offers $opt, which the command refuses: $(cat opt.err)"
    done
done <ctxs
# --list-options goes before any "--": after it, a word is an argument (a key, a file)
"$AMQ" create lo.amq --capacity 100 2>/dev/null
echo x | "$AMQ" add lo.amq --list-options -- >lo.txt 2>&1
expect_eq "--list-options before --" "--stats" "$(head -n 1 lo.txt)"

CASE=info-text-and-json-agree
# Every kind's info says its fill ratio in text as in --json (fuse and ribbon had no line).
for k in $kinds; do
    [ -e lk-$k.amq ] || { fail "no lk-$k.amq built"; continue; }
    text=$("$AMQ" info lk-$k.amq 2>/dev/null | sed -n 's/^fill ratio: *\([0-9.]*\).*/\1/p')
    json=$("$AMQ" info --json lk-$k.amq 2>/dev/null |
           /usr/bin/python3 -c 'import json, sys; print("%.4f" % json.load(sys.stdin)["fill_ratio"])')
    expect_eq "$k: info's fill ratio, text and --json" "$json" "$text"
    [ -n "$text" ] || fail "$k: no fill ratio: $("$AMQ" info lk-$k.amq 2>&1 | head -c 200)"
done

CASE=compressed-inputs-one-wording
# Every help of a command that reads INPUTs names the formats the input layer decompresses,
# in one wording (amq --help, query and build said gzip only); and each works.
printf 'a\nb\n' >ci.txt
gzip -c ci.txt >ci.gz; zstd -q -c ci.txt >ci.zst; xz -c ci.txt >ci.xz; bzip2 -c ci.txt >ci.bz2
"$AMQ" build ci.amq ci.txt 2>/dev/null
for c in "" add remove query build dedup; do
    # shellcheck disable=SC2086
    "$AMQ" $c --help | tr '\n' ' ' | tr -s ' ' | grep -qi "gzip, zstd, xz and bzip2 in" ||
        fail "amq $c --help does not say 'gzip, zstd, xz and bzip2 in(puts are decompressed)'"
done
for z in gz zst xz bz2; do
    expect_eq "query of a .$z input" 2 "$("$AMQ" query -c ci.amq ci.$z)"
done

CASE=docs-inside-the-repo
grep -rn 'shared/specs\|/work/\|example\.invalid' "$REPO/README.md" "$REPO/docs" \
    "$REPO/amq.pc.in" "$REPO/redis" "$REPO/cli" >outside.txt
expect_eq "references outside the repository" "" "$(cat outside.txt)"

CASE=help-to-a-full-device
# A write error on standard output is an error (the man page), --help and --version too:
# 'amq --help > /dev/full' exited 0.
if [ -w /dev/full ]; then
    for args in "--help" "-h" "help" "help add" "help kinds" "--version" "add --help" \
        "add --version"; do
        # shellcheck disable=SC2086
        expect_status 2 sh -c "'$AMQ' $args >/dev/full"
        expect_stderr_has "write error on standard output"
    done
fi

CASE=one-version
# The man page's footer said amq 0.1.0 while --version printed 0.3.0: every copy of the
# version states the header's (the Makefile takes it from there; install writes it in).
v=$("$AMQ" --version | sed -n 's/^amq \([0-9.]*\) .*/\1/p')
expect_eq "man page footer" "$v" "$(sed -n '1s/.*"amq \([0-9.]*\)".*/\1/p' "$REPO/docs/amq.1")"
expect_eq "Makefile" "$v" "$(make -s -C "$REPO" -p -n 2>/dev/null | sed -n 's/^VERSION := //p' | head -n 1)"
expect_eq "python package" "$v" "$(sed -n 's/^version = "\(.*\)"/\1/p' "$REPO/python/pyproject.toml")"
expect_eq "python __version__" "$v" "$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$REPO/python/amq/__init__.py")"

finish
