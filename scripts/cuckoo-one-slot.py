#!/usr/bin/python3
"""Where cuckoo filters of 1-slot buckets first refuse an add, by fingerprint width.

    PYTHONPATH=build/python scripts/cuckoo-one-slot.py [--capacity N,...] [--widths F,...]

For each capacity and width: a filter of that capacity at 1 % (bucket size 1, the width
given), random 8-byte keys added one at a time past its capacity (allow_overfill) until the
first refusal; prints the load then (keys over slots) beside the load the sizing promises
(capacity over slots).  A record for docs/cuckoo.md's one-slot caps (src/cuckoo_sizing.c);
the load at the first refusal moves from run to run, and falls as tables grow.
"""
import argparse
import random

import amq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capacity", default="1000000,4000000")
    ap.add_argument("--widths", default="10,12,14,16")
    a = ap.parse_args()
    for cap in (int(float(x)) for x in a.capacity.split(",")):
        for f in (int(x) for x in a.widths.split(",")):
            flt = amq.Filter(cap, kind="cuckoo", fingerprint_bits=f, bucket_size=1)
            slots = flt.info()["buckets"]
            rnd = random.Random(f * 1000003 + cap)
            n = 0
            while n < slots:
                try:
                    flt.add(rnd.getrandbits(64).to_bytes(8, "little"), allow_overfill=True)
                except amq.FilterFullError:
                    break
                n += 1
            print("capacity %d, %d-bit fingerprints, %d slots: first refusal at load %.3f "
                  "(sized for %.3f)" % (cap, f, slots, n / slots, cap / slots), flush=True)


if __name__ == "__main__":
    main()
