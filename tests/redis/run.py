#!/usr/bin/python3
"""run.py - runs the Redis module tests (tests/redis/test_*.py).

Each test file defines functions test_*(env).  env.server is a server
started for that file (flushed before each test); env.module the module
path, env.new_server(...) starts more (stopped after the test).  Every
server is stopped by its PID when the run ends, whatever happens.

    /usr/bin/python3 tests/redis/run.py --module build/amq.so [-k substring] [files...]
"""
import argparse
import glob
import importlib.util
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


class Env:
    def __init__(self, module):
        self.module = os.path.abspath(module)
        self.server = None
        self.extra = []

    def new_server(self, module_args=(), **kw):
        s = harness.Server(self.module, module_args, **kw)
        self.extra.append(s)
        return s

    def new_cluster(self, n=3, module_args=()):
        c = harness.Cluster(self.module, n, module_args)
        self.extra.append(c)
        return c

    def track(self, s):
        self.extra.append(s)
        return s

    def end_test(self):
        for s in self.extra:
            s.cleanup()
        self.extra = []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True)
    ap.add_argument("-k", default="")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    # SIGTERM (an interrupted make) unwinds like an exception: servers stop.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    here = os.path.dirname(os.path.abspath(__file__))
    files = a.files or sorted(glob.glob(os.path.join(here, "test_*.py")))
    env = Env(a.module)
    failed, passed = [], 0
    t_all = time.time()
    try:
        for path in files:
            name = os.path.splitext(os.path.basename(path))[0]
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            tests = [(n, f) for n, f in vars(mod).items()
                     if n.startswith("test_") and callable(f) and a.k in n]
            tests.sort(key=lambda t: t[1].__code__.co_firstlineno)
            if not tests:
                continue
            env.server = harness.Server(env.module, getattr(mod, "MODULE_ARGS", ()))
            t_file = time.time()
            try:
                for n, f in tests:
                    t0 = time.time()
                    try:
                        if not env.server.alive():
                            raise RuntimeError("the file's server died:\n" + env.server.log_tail())
                        env.server.client().flushall()
                        f(env)
                        if not env.server.alive():
                            raise RuntimeError("the server died during the test:\n"
                                               + env.server.log_tail())
                        passed += 1
                        print("  ok   %s.%s (%.1fs)" % (name, n, time.time() - t0), flush=True)
                    except Exception:
                        failed.append("%s.%s" % (name, n))
                        print("  FAIL %s.%s" % (name, n), flush=True)
                        traceback.print_exc()
                        print("--- server log tail ---\n" + env.server.log_tail(6), flush=True)
                        if not env.server.alive():
                            env.server.cleanup()
                            env.server = harness.Server(env.module,
                                                        getattr(mod, "MODULE_ARGS", ()))
                    finally:
                        env.end_test()
            finally:
                env.server.cleanup()
                print("%s: %.1fs" % (name, time.time() - t_file), flush=True)
    finally:
        env.end_test()
        harness.stop_all()
    print("redis module tests: %d passed, %d failed (%.1fs)"
          % (passed, len(failed), time.time() - t_all))
    for f in failed:
        print("  failed: " + f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
