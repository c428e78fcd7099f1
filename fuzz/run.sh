#!/bin/sh
# run.sh SECONDS FUZZDIR TARGET... - runs each libFuzzer target for SECONDS
# on its corpus (FUZZDIR/corpus/T, grown in place), the generated seeds
# (FUZZDIR/seeds/T) and the regressions (fuzz/regressions/T), with the
# target's dictionary (fuzz/T.dict) and options (fuzz/T.options) when they
# exist, then prints one summary line per target: executions, coverage
# (cov: edges, ft: features), corpus size.  Exit status 1 if any target
# found a failure (its input is in FUZZDIR/artifacts/T/).
secs=$1
dir=$2
shift 2
status=0
mkdir -p "$dir/logs"
for t in "$@"; do
    corpus="$dir/corpus/$t"
    art="$dir/artifacts/$t/"
    log="$dir/logs/$t.log"
    mkdir -p "$corpus" "$art"
    set -- "$corpus"
    [ -d "$dir/seeds/$t" ] && set -- "$@" "$dir/seeds/$t"
    [ -d "fuzz/regressions/$t" ] && set -- "$@" "fuzz/regressions/$t"
    [ -f "fuzz/$t.dict" ] && set -- "$@" "-dict=fuzz/$t.dict"
    # shellcheck disable=SC2046
    "$dir/bin/$t" "$@" -max_total_time="$secs" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$art" $( [ -f "fuzz/$t.options" ] && cat "fuzz/$t.options" ) \
        $FUZZ_FLAGS >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
    cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$last" | sed -n 's/.*corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p')
    if [ $rc -ne 0 ]; then
        status=1
        echo "$t: FAILED after ${secs}s (exit $rc) - see $log and $art" >&2
        grep -E 'ERROR|fuzz check failed|SUMMARY|Test unit written' "$log" | head -n 8 >&2
    else
        printf '%-26s %5ss  execs %-12s cov %-6s ft %-7s corpus %s\n' "$t" "$secs" "$execs" \
            "$cov" "$ft" "$corp"
    fi
done
exit $status
