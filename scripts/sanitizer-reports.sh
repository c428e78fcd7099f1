# sanitizer-reports.sh - sourced by test-module-asan.sh and test-python-asan.sh:
# sanitizer_verdict NAME STATUS DIR prints every report the sanitizers wrote into DIR and the
# run's verdict, and exits 0 only when STATUS is 0 and DIR holds no report.
sanitizer_verdict() {
    _name=$1
    _status=$2
    for _r in "$3"/*; do
        [ -s "$_r" ] || continue # (a server's standard error, kept, is empty when all is well)
        echo "$_name: a sanitizer report ($_r):"
        cat "$_r"
        _status=1
    done
    if [ "$_status" -eq 0 ]; then
        echo "$_name: passed, no sanitizer report"
    else
        echo "$_name: FAILED"
    fi
    exit "$_status"
}
