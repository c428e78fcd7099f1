# lib.sh - helpers for the CLI tests (sourced).  Each check prints what it
# expected and what it got when it fails; the script exits non-zero at the
# end if any check failed.
: "${AMQ:?set AMQ to the amq binary}"
case "$AMQ" in /*) ;; *) AMQ="$PWD/$AMQ" ;; esac
failures=0
checks=0
T=$(mktemp -d "${TMPDIR:-/tmp}/amq-cli-XXXXXX")
trap 'rm -rf "$T"' EXIT

fail() {
    failures=$((failures + 1))
    echo "  FAIL [$CASE]: $*" >&2
}

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
    checks=$((checks + 1))
    [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
}

# expect_status WANT CMD... : runs CMD, compares its exit status.
expect_status() {
    want=$1
    shift
    checks=$((checks + 1))
    "$@" >"$T/.out" 2>"$T/.err"
    got=$?
    [ "$got" = "$want" ] || fail "'$*' exited $got, expected $want; stderr: $(head -c 300 "$T/.err")"
}

# expect_stderr_has TEXT : the last expect_status's stderr contains TEXT.
expect_stderr_has() {
    checks=$((checks + 1))
    grep -qF -- "$1" "$T/.err" || fail "stderr lacks '$1': $(head -c 300 "$T/.err")"
}

# expect_stderr_lacks TEXT : the last expect_status's stderr does not contain TEXT.
expect_stderr_lacks() {
    checks=$((checks + 1))
    ! grep -qF -- "$1" "$T/.err" || fail "stderr has '$1': $(head -c 300 "$T/.err")"
}

expect_same_file() {
    checks=$((checks + 1))
    cmp -s "$1" "$2" || fail "$1 and $2 differ"
}

# Waits for background jobs in order; $statuses their exit statuses ("0 0": both succeeded).
# (Not in $(...): a subshell cannot wait for this shell's jobs.)
wait_statuses() {
    statuses=
    for _p in "$@"; do
        wait "$_p"
        statuses="$statuses${statuses:+ }$?"
    done
}

finish() {
    if [ "$failures" -ne 0 ]; then
        echo "$0: $failures of $checks checks failed" >&2
        exit 1
    fi
    echo "$0: $checks checks passed"
}
