#!/usr/bin/env python3
"""check-errors.py [INCLUDE_DIR] - every public function that returns a status says which.

lmdb.h's discipline: the comment of each function declared `AMQ_API int` in the public
headers names the statuses it returns (AMQ_OK, AMQ_ENOMEM, ...), or says it "cannot fail".  The comment that counts is
the nearest one above the declaration, across the declarations of the same group (a comment
may cover a function's key and hash forms) and #define lines.  Predicates, which return 1 or
0 and no status (names ending in _contains, _contains_hash, _contains_at, or with _is_ / _has_,
and amq_simd_supported), are exempt.  Prints each function without a list and exits 1.
"""
import os
import re
import sys

PREDICATE = re.compile(r"(_contains(_hash|_at)?$|_is_|_has_|^amq_simd_supported$)")
STATUS = re.compile(r"\bAMQ_(OK|E[A-Z]+)\b|cannot fail")


def governing_comment(lines, i):
    """The comment above line i, skipping declarations, #defines and blank lines."""
    j = i - 1
    while j >= 0:
        s = lines[j].strip()
        if s.endswith("*/"):
            end = j
            while j >= 0 and "/*" not in lines[j]:
                j -= 1
            text = "\n".join(lines[j:end + 1])
            if lines[j].strip().startswith("/*"):
                return text
            # a trailing comment on a declaration line: keep looking above it
            j -= 1
            continue
        if s == "" or s.startswith("#define") or s.startswith("AMQ_API") or \
                not s.startswith(("/*", "*", "typedef", "}", "#")):
            j -= 1
            continue
        return ""
    return ""


def main(argv):
    inc = argv[0] if argv else "include"
    headers = [os.path.join(inc, "amq.h")] + sorted(
        os.path.join(inc, "amq", f) for f in os.listdir(os.path.join(inc, "amq")) if f.endswith(".h"))
    missing, total = [], 0
    for h in headers:
        with open(h, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        for i, line in enumerate(lines):
            m = re.match(r"\s*AMQ_API\s+int\s+(amq_\w+)\s*\(", line)
            if not m:
                continue
            name = m.group(1)
            if PREDICATE.search(name):
                continue
            total += 1
            if not STATUS.search(governing_comment(lines, i)):
                missing.append("%s:%d: %s" % (h, i + 1, name))
    if missing:
        print("check-errors: these functions return a status but their comment lists none "
              "(name each AMQ_OK / AMQ_E* they return):", file=sys.stderr)
        print("\n".join("  " + x for x in missing), file=sys.stderr)
        return 1
    print("errors: %d status-returning public functions, each lists its statuses" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
