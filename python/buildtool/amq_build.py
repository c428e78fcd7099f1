"""In-tree PEP 517 build backend of the amq Python package.

It needs only the standard library, make and a C compiler, so that
`pip install ./python` works where no package index is reachable: it runs
`make lib` in the repository (libamq.a, position-independent), compiles
amq/_amq.c against this interpreter's headers, links the archive in and
writes the wheel itself.  `make python` calls build_inplace() for the
tests (python3 buildtool/amq_build.py --inplace DIR).  libamq is built in
$AMQ_BUILD_DIR, else the repository's build/, else (a read-only checkout)
a temporary directory.  `pip install -e ./python` (PEP 660) compiles the
extension beside its sources and installs a .pth naming python/.
"""
import base64
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)            # python/
REPO = os.path.dirname(PKG_ROOT)            # the repository
NAME = "amq"
VERSION = "0.3.0"
PURE = ["__init__.py", "hash.py", "redis.py", "redistype.py", "__init__.pyi", "hash.pyi",
        "redis.pyi", "redistype.pyi", "py.typed"]


def _run(cmd, **kw):
    if os.environ.get("AMQ_BUILD_VERBOSE"):
        print("amq_build:", " ".join(cmd), file=sys.stderr)
    r = subprocess.run(cmd, **kw)
    if r.returncode != 0:
        raise RuntimeError("amq_build: failed (%d): %s" % (r.returncode, " ".join(cmd)))


def _libamq(build_dir):
    """Builds libamq.a in build_dir (relative to the repository, or absolute)."""
    if not os.path.exists(os.path.join(REPO, "include", "amq.h")):
        raise RuntimeError("amq_build: the package builds from the amq repository "
                           "(python/ beside include/ and src/)")
    # A make of its own with its own -j: under make (make python, make test) the caller's
    # jobserver flags would meet that -j and make warns that it resets them.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    _run(["make", "-C", REPO, "--no-print-directory", "-s", "-j%d" % (os.cpu_count() or 1),
          "BUILD=" + build_dir, os.path.join(build_dir, "libamq.a")], env=env)
    return os.path.join(REPO, build_dir, "libamq.a")


def _writable_build_dir(tmp):
    """Where libamq is built: $AMQ_BUILD_DIR, else the repository's build/
    (reused from build to build), else - a read-only checkout - tmp/build."""
    if os.environ.get("AMQ_BUILD_DIR"):
        return os.environ["AMQ_BUILD_DIR"]
    try:
        os.makedirs(os.path.join(REPO, "build"), exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=os.path.join(REPO, "build"))
        probe.close()
        return "build"
    except OSError:
        return os.path.join(tmp, "build")


def compile_extension(out_dir, build_dir="build", cc=None, extra_cflags=()):
    """Compiles amq/_amq.c into out_dir/amq/_amq<EXT_SUFFIX>; returns its path."""
    lib = _libamq(build_dir)
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = os.path.join(out_dir, NAME, "_amq" + suffix)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    cc = cc or os.environ.get("CC") or "cc"
    inc = sysconfig.get_paths()["include"]
    cmd = [cc, "-std=c11", "-O2", "-g", "-fPIC", "-shared", "-pthread",
           "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE",
           "-I" + inc, "-I" + os.path.join(REPO, "include"), *extra_cflags,
           os.path.join(PKG_ROOT, NAME, "_amq.c"), "-o", target,
           "-Wl,--exclude-libs,ALL", lib, "-lxxhash", "-lm"]
    _run(cmd)
    return target


def build_inplace(out_dir, build_dir="build", extra_cflags=()):
    """The package's pure files and the extension under out_dir/amq."""
    dst = os.path.join(out_dir, NAME)
    os.makedirs(dst, exist_ok=True)
    for f in PURE:
        shutil.copyfile(os.path.join(PKG_ROOT, NAME, f), os.path.join(dst, f))
    return compile_extension(out_dir, build_dir, extra_cflags=extra_cflags)


# ---- PEP 517 hooks --------------------------------------------------------

def _tag():
    impl = "cp" if sys.implementation.name == "cpython" else sys.implementation.name[:2]
    ver = "%d%d" % sys.version_info[:2]
    abi = impl + ver + getattr(sys, "abiflags", "")
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s%s-%s-%s" % (impl, ver, abi, plat)


def _metadata():
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: Approximate-membership filters over libamq\n"
            "Requires-Python: >=3.8\n" % (NAME, VERSION))


def _record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "%s,sha256=%s,%d" % (arc, digest.decode(), len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = "%s-%s.dist-info" % (NAME, VERSION)
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w") as f:
        f.write(_metadata())
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "wheel")
        build_inplace(out, _writable_build_dir(tmp))
        files = []
        for root, _, names in os.walk(os.path.join(out, NAME)):
            for n in sorted(names):
                full = os.path.join(root, n)
                with open(full, "rb") as f:
                    files.append((os.path.relpath(full, out), f.read()))
        return _write_wheel(wheel_directory, files)


def _write_wheel(wheel_directory, files):
    """Writes the wheel of files [(name in the wheel, bytes)] plus its
    dist-info; returns its file name."""
    tag = _tag()
    info = "%s-%s.dist-info" % (NAME, VERSION)
    wheel_name = "%s-%s-%s.whl" % (NAME, VERSION, tag)
    files = list(files)
    files.append((info + "/METADATA", _metadata().encode()))
    files.append((info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: amq_build\n"
                                    "Root-Is-Purelib: false\nTag: %s\n" % tag).encode()))
    record = [_record_line(a, d) for a, d in files] + [info + "/RECORD,,"]
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    os.makedirs(wheel_directory, exist_ok=True)
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            z.writestr(arc, data)
    return wheel_name


# ---- PEP 660: pip install -e ./python ---------------------------------------

def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel holding only a .pth naming python/: the package is imported
    from the checkout, with the extension compiled next to its sources (run
    pip install -e again, or make python, after changing the C code)."""
    with tempfile.TemporaryDirectory() as tmp:
        compile_extension(PKG_ROOT, _writable_build_dir(tmp))
    return _write_wheel(wheel_directory, [("amq_editable.pth", (PKG_ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError("amq_build: the package is built from the amq repository; "
                       "no sdist (its C library lives beside python/)")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--inplace":
        sys.exit("usage: amq_build.py --inplace OUT_DIR")
    with tempfile.TemporaryDirectory() as tmp_:
        # AMQ_EXTRA_CFLAGS: the extension's own flags beside libamq's build (a sanitized build:
        # scripts/test-python-asan.sh)
        print(build_inplace(sys.argv[2], _writable_build_dir(tmp_),
                            os.environ.get("AMQ_EXTRA_CFLAGS", "").split()))
