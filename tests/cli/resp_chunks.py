#!/usr/bin/python3
"""resp_chunks.py - rewrites the LOADCHUNK stream `amq export --to redis`
writes, to make the damaged streams the import tests need (test_build.sh).

    resp_chunks.py IN OUT repeat I J   data chunk J replaced by data chunk I
                                       (the whole command: its iterator too)
    resp_chunks.py IN OUT swap I J     data chunks I and J change places
    resp_chunks.py IN OUT fill I       the first zero byte of data chunk I set
                                       to 1 (a fingerprint the header does
                                       not count, in a Cuckoo stream)
    resp_chunks.py IN count            prints the number of data chunks

Data chunks are the LOADCHUNK commands after the header (iterator 1),
numbered from 0.
"""
import sys


def arrays(b):
    """The top-level RESP arrays of b as byte strings, and the bulk strings of each."""
    pos, out = 0, []
    while pos < len(b):
        assert b[pos:pos + 1] == b"*", pos
        end = b.index(b"\r\n", pos)
        n = int(b[pos + 1:end])
        start, p, items = pos, end + 2, []
        for _ in range(n):
            e = b.index(b"\r\n", p)
            ln = int(b[p + 1:e])
            items.append(b[e + 2:e + 2 + ln])
            p = e + 2 + ln + 2
        out.append((b[start:p], items))
        pos = p
    return out


def main():
    data = open(sys.argv[1], "rb").read()
    arr = arrays(data)
    chunks = [i for i, (_, it) in enumerate(arr)
              if it[0].upper().endswith(b".LOADCHUNK") and it[2] != b"1"]
    if sys.argv[2] == "count":
        print(len(chunks))
        return
    out, op = sys.argv[2], sys.argv[3]
    raw = [a[0] for a in arr]
    if op == "repeat":
        i, j = chunks[int(sys.argv[4])], chunks[int(sys.argv[5])]
        assert len(arr[i][1][3]) == len(arr[j][1][3]), "chunks of different lengths"
        raw[j] = raw[i]
    elif op == "swap":
        i, j = chunks[int(sys.argv[4])], chunks[int(sys.argv[5])]
        raw[i], raw[j] = raw[j], raw[i]
    elif op == "fill":
        i = chunks[int(sys.argv[4])]
        payload = arr[i][1][3]
        z = payload.index(b"\x00")
        tail = raw[i][:len(raw[i]) - 2 - len(payload)]
        raw[i] = tail + payload[:z] + b"\x01" + payload[z + 1:] + b"\r\n"
    else:
        sys.exit("unknown operation " + op)
    open(out, "wb").write(b"".join(raw))


if __name__ == "__main__":
    main()
