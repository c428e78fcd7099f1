"""harness.py - real redis-server instances for the module tests.

Servers listen on 127.0.0.1 on free ports, each in its own temporary
directory, with the module loaded; every server started is stopped by its
PID at the end (also when a test fails or the runner is interrupted).

    srv = Server(module)                 # started
    r = srv.client()                     # redis-py, RESP2
    r3 = srv.resp3()                     # tiny RESP3 client (HELLO 3)
    srv.restart()                        # same dir: reloads dump.rdb / AOF
    rep = srv.replica()                  # REPLICAOF srv, synced
    cl = Cluster(module, 3)              # 3 primaries, cluster.client()
"""
import functools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import redis
from redis.cluster import RedisCluster, ClusterNode

# The server under test: REDIS_SERVER (a path) selects another build (Redis 8, Valkey 8:
# `make test-servers`); REDIS_CLI likewise, else the redis-cli beside that server.
REDIS_SERVER = (os.environ.get("REDIS_SERVER") or shutil.which("redis-server")
                or "/usr/bin/redis-server")
_cli_beside = os.path.join(os.path.dirname(REDIS_SERVER), "redis-cli")
REDIS_CLI = (os.environ.get("REDIS_CLI")
             or (_cli_beside if os.path.exists(_cli_beside) else None)
             or shutil.which("redis-cli") or "/usr/bin/redis-cli")


# Set by scripts/test-module-asan.sh: the server runs with ASan's allocator, which pads every
# block, so a test that weighs the server's memory against a fixed figure skips that check.
SANITIZED = os.environ.get("AMQ_REDIS_SANITIZED") == "1"


@functools.lru_cache(maxsize=None)
def server_info():
    """(name, (major, minor, patch)) of the server under test: "redis" or "valkey"."""
    out = subprocess.run([REDIS_SERVER, "--version"], capture_output=True, text=True,
                         timeout=30).stdout
    name = "valkey" if out.lower().startswith("valkey") else "redis"
    ver = out.split("v=", 1)[1].split()[0] if "v=" in out else "0.0.0"
    return name, tuple(int(x) for x in (ver.split(".") + ["0", "0"])[:3])

_live = []  # every Server not yet stopped


def free_port():
    """A TCP port free on 127.0.0.1 now (and, for cluster use, port+10000)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port > 55000:
            continue
        with socket.socket() as s2:
            try:
                s2.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port")


def stop_all():
    for s in list(_live):
        s.stop()


class Server:
    def __init__(self, module, module_args=(), dir=None, conf=None, port=None, start=True,
                 binary=None):
        self.binary = binary or REDIS_SERVER
        self.module = os.path.abspath(module)
        self.module_args = [str(a) for a in module_args]
        self.owns_dir = dir is None
        self.dir = dir or tempfile.mkdtemp(prefix="amq-redis-")
        self.conf = dict(conf or {})
        self.port = port or free_port()
        self.proc = None
        if start:
            self.start()

    # ---- life cycle ---------------------------------------------------
    def argv(self):
        a = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", self.dir, "--logfile", "redis.log", "--save", "",
             "--appendonly", "no", "--enable-debug-command", "local",
             "--protected-mode", "no", "--repl-diskless-sync-delay", "0"]
        for k, v in self.conf.items():
            a += ["--" + k] + ([str(v)] if not isinstance(v, (list, tuple))
                              else [str(x) for x in v])
        if self.module_args != ["--no-module"]:
            a += ["--loadmodule", self.module] + self.module_args
        else:  # the test loads it (MODULE LOAD / LOADEX)
            a += ["--enable-module-command", "yes"]
        return a

    def start(self, wait=True):
        self.proc = subprocess.Popen(self.argv(), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        _live.append(self)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=180.0):
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited (%s):\n%s"
                                   % (self.proc.returncode, self.log_tail()))
            try:
                c = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)
                if c.ping():
                    info = c.info("persistence")
                    c.close()
                    if not info.get("loading"):
                        return
            except (redis.ConnectionError, redis.BusyLoadingError, redis.TimeoutError):
                pass
            time.sleep(0.02)
        raise RuntimeError("redis-server did not start:\n" + self.log_tail())

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=30.0):
        """SIGTERM by PID (the server saves if configured to), then SIGKILL."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
        if self in _live:
            _live.remove(self)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
        if self in _live:
            _live.remove(self)

    def restart(self, **conf):
        self.stop()
        self.conf.update(conf)
        return self.start()

    def cleanup(self):
        self.stop()
        if self.owns_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self, n=40):
        try:
            with open(os.path.join(self.dir, "redis.log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return "(no log)"

    # ---- clients -------------------------------------------------------------
    def client(self, **kw):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=120, **kw)

    def resp3(self):
        return Resp3(self.port)

    def resp2(self):
        """The tiny client in RESP2: exact error strings (redis-py strips 'ERR ')."""
        return Resp3(self.port, proto=2)

    def cli(self, *args, resp3=False):
        a = [REDIS_CLI, "-h", "127.0.0.1", "-p", str(self.port)]
        if resp3:
            a.append("-3")
        return subprocess.run(a + [str(x) for x in args], capture_output=True,
                              timeout=60).stdout

    # ---- replication -----------------------------------------------------------
    def replica(self, module_args=None):
        rep = Server(self.module, self.module_args if module_args is None else module_args)
        rep.client().replicaof("127.0.0.1", self.port)
        self.sync_replica(rep)
        return rep

    def sync_replica(self, rep, timeout=30.0):
        """Waits until rep is connected and has processed everything sent."""
        t0 = time.time()
        rc = rep.client()
        while time.time() - t0 < timeout:
            info = rc.info("replication")
            if info.get("master_link_status") == "up" and not info.get("master_sync_in_progress"):
                break
            time.sleep(0.05)
        else:
            raise RuntimeError("replica did not connect:\n" + rep.log_tail())
        pc = self.client()
        while time.time() - t0 < timeout:
            off = pc.info("replication").get("master_repl_offset")
            if rc.info("replication").get("slave_repl_offset") == off:
                return
            time.sleep(0.02)
        raise RuntimeError("replica did not catch up")


class Cluster:
    """n primaries on loopback (each with `replicas` replicas), created with
    redis-cli --cluster create; node_timeout is cluster-node-timeout (ms)."""

    def __init__(self, module, n=3, module_args=(), replicas=0, node_timeout=5000):
        self.nodes = []
        try:
            for _ in range(n * (1 + replicas)):
                self.nodes.append(Server(module, module_args, conf={
                    "cluster-enabled": "yes", "cluster-config-file": "nodes.conf",
                    "cluster-node-timeout": str(node_timeout)}))
            addrs = ["127.0.0.1:%d" % s.port for s in self.nodes]
            out = subprocess.run([REDIS_CLI, "--cluster", "create"] + addrs +
                                 ["--cluster-replicas", str(replicas), "--cluster-yes"],
                                 capture_output=True, timeout=120, text=True)
            if out.returncode != 0:
                raise RuntimeError("cluster create failed:\n" + out.stdout + out.stderr)
            self.wait_ok(replicas=replicas)
        except Exception:
            self.cleanup()
            raise

    def live(self):
        return [s for s in self.nodes if s.alive()]

    def wait_ok(self, timeout=60.0, replicas=0):
        """Until every live node says cluster_state:ok, agrees on who serves every slot,
        and (replicas > 0) each primary has that many replicas connected."""
        t0 = time.time()
        while time.time() - t0 < timeout:
            try:
                live = self.live()
                if all(s.client().cluster("info").get("cluster_state") == "ok" for s in live):
                    maps = [self.slot_map(s) for s in live]
                    if all(m == maps[0] for m in maps) and len(maps[0]) == 16384:
                        if not replicas or all(
                                s.client().info("replication").get("connected_slaves", 0)
                                >= replicas for s in self.primaries()):
                            return
            except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
                pass
            time.sleep(0.1)
        raise RuntimeError("cluster not ok")

    @staticmethod
    def slot_map(s):
        """{slot: primary port} as node s sees it."""
        m = {}
        for lo, hi, primary, *_ in s.client().execute_command("CLUSTER", "SLOTS"):
            for slot in range(lo, hi + 1):
                m[slot] = primary[1]
        return m

    def primaries(self):
        return [s for s in self.live()
                if s.client().info("replication").get("role") == "master"]

    def by_port(self, port):
        return next(s for s in self.nodes if s.port == int(port))

    def node_id(self, s):
        return s.client().execute_command("CLUSTER", "MYID").decode()

    def client(self):
        # Live nodes only: redis-py logs a traceback for each seed it cannot reach.
        return RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", s.port) for s in self.live()],
                            socket_timeout=30)

    def cleanup(self):
        for s in self.nodes:
            s.cleanup()


# ---- a tiny RESP3 client ---------------------------------------------------------

class RespError(Exception):
    pass


class Resp3:
    """RESP3 over a socket: HELLO 3, then commands; replies typed:
    bool for #, dict for %, None for _, int for :, bytes for $ and +,
    float for ,, list for * ~ >, RespError (returned, not raised) for -."""

    def __init__(self, port, proto=3):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.buf = b""
        if proto == 3:
            hello = self.execute("HELLO", "3")
            if not isinstance(hello, dict):
                raise RuntimeError("HELLO 3 failed: %r" % (hello,))

    def close(self):
        self.sock.close()

    def execute(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            elif isinstance(a, (int, float)):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        return self._read()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest
        if t == b"-":
            return RespError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t == b"_":
            return None
        if t == b"#":
            return rest == b"t"
        if t == b",":
            return float(rest)
        if t in (b"*", b"~", b">"):
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        if t == b"%":
            n = int(rest)
            d = {}
            for _ in range(n):
                k = self._read()
                d[k] = self._read()
            return d
        if t == b"|":  # attribute: skip it, return what follows
            n = int(rest)
            for _ in range(2 * n):
                self._read()
            return self._read()
        raise RuntimeError("unknown RESP3 type %r" % line)


# ---- CRC64 of DUMP payloads (Jones polynomial, reflected, as Redis) ----------------

_CRC_TABLE = None


def crc64(data, crc=0):
    global _CRC_TABLE
    if _CRC_TABLE is None:
        poly = 0x95AC9329AC4BC9B5  # 0xad93d23594c935a9 reflected
        t = []
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ poly if c & 1 else c >> 1
            t.append(c)
        _CRC_TABLE = t
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def rdb_version():
    """The RDB version the server under test writes in DUMP payloads."""
    name, ver = server_info()
    if name == "valkey":
        return 11  # Valkey 7.2 and 8.x
    return 10 if ver < (7, 2, 0) else 11 if ver < (7, 4, 0) else 12


def dump_payload(body, rdbver=None):
    """A DUMP payload for RESTORE: body + RDB version (2 bytes LE) + CRC64 LE."""
    if rdbver is None:
        rdbver = rdb_version()
    p = body + bytes([rdbver & 0xFF, rdbver >> 8])
    return p + crc64(p).to_bytes(8, "little")
