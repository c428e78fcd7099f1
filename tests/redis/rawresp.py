"""rawresp.py - a RESP client that returns every reply as the exact bytes the
server sent (one whole reply, nested arrays/maps included), so two servers
can be compared byte for byte: a simple string `+OK` and a bulk string
`$2 OK` differ here even where a client library hides it.

    c = RawClient(port)
    raw = c.call([b"BF.ADD", b"k", b"a"])     # b":1\\r\\n"
"""
import socket


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode("latin-1")
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RawClient:
    def __init__(self, port, host="127.0.0.1", timeout=120):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""
        self.pos = 0

    def close(self):
        self.sock.close()

    def call(self, args):
        self.sock.sendall(encode(args))
        return self.read()

    def read(self):
        """The next whole reply, raw."""
        self.buf = self.buf[self.pos:]
        self.pos = 0
        self._skip()
        raw = self.buf[:self.pos]
        self.buf = self.buf[self.pos:]
        self.pos = 0
        return raw

    def _fill(self, need):
        while len(self.buf) < need:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("connection closed by the server")
            self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = self.buf[self.pos:i]
                self.pos = i + 2
                return line
            self._fill(len(self.buf) + 1)

    def _skip(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-", b":", b"_", b"#", b",", b"("):
            return
        if t in (b"$", b"=", b"!"):
            n = int(rest)
            if n >= 0:
                self._fill(self.pos + n + 2)
                self.pos += n + 2
            return
        if t in (b"*", b"~", b">"):
            for _ in range(max(int(rest), 0)):
                self._skip()
            return
        if t in (b"%", b"|"):
            for _ in range(2 * int(rest)):
                self._skip()
            if t == b"|":  # an attribute precedes the reply it annotates
                self._skip()
            return
        raise RuntimeError("unknown RESP type in %r" % line)
