"""Installing: from a read-only checkout, and editable (pip install -e), offline."""
import glob
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile

import pytest

from conftest import REPO

PY = sys.executable


def _copy_checkout(dst):
    """The checkout the package builds from, without build/ and .git."""
    for name in os.listdir(REPO):
        if name in ("build", ".git"):
            continue
        src = os.path.join(REPO, name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dst, name), symlinks=True,
                            ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        else:
            shutil.copy2(src, os.path.join(dst, name))


def test_wheel_builds_from_a_read_only_checkout(tmp):
    """Used to fail with `mkdir: cannot create directory 'build'`: the
    backend now builds libamq in a temporary directory when the checkout's
    build/ cannot be written.  Run as an unprivileged user, for whom a
    read-only tree really is read-only (root writes anywhere)."""
    base = tempfile.mkdtemp(prefix="amq-ro-")  # pytest's tmp is private to root
    os.chmod(base, 0o755)
    src = pathlib.Path(base) / "ro"
    out = pathlib.Path(base) / "out"
    src.mkdir()
    out.mkdir()
    _copy_checkout(str(src))
    for root, dirs, files in os.walk(src):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o555 if n in dirs else 0o444)
    os.chmod(src, 0o555)
    os.chmod(out, 0o777)
    env = {k: v for k, v in os.environ.items() if k != "AMQ_BUILD_DIR"}
    # libamq at -O1 without debug information (make reads OPT and CFLAGS from the
    # environment): where it is built is what is tested, and -O2 -g took 3 times as long (at
    # -O0 gcc's AVX-512 intrinsics are macros that -Wsign-conversion refuses under WERROR=1)
    env.update(TMPDIR=str(out), HOME=str(out), OPT="-O1", CFLAGS="-g0")
    cmd = [PY, "-c", "import sys; sys.path.insert(0, 'python/buildtool'); import amq_build; "
           "print(amq_build.build_wheel(%r))" % str(out)]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("needs setpriv (util-linux) to drop root")
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
    try:
        r = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]
        wheel = out / r.stdout.split()[-1]
        names = zipfile.ZipFile(wheel).namelist()
        assert any(n.startswith("amq/_amq") and n.endswith(".so") for n in names), names
        assert "amq/__init__.pyi" in names and not os.path.exists(src / "build")
    finally:
        for root, dirs, _ in os.walk(src):
            os.chmod(root, 0o755)
        shutil.rmtree(base, ignore_errors=True)


def test_editable_install_offline(tmp):
    """pip install -e ./python: the PEP 660 hooks, with no index reachable."""
    env_dir = tmp / "venv"
    r = subprocess.run([PY, "-m", "venv", "--system-site-packages", str(env_dir)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("no venv module (python3-venv): " + r.stderr[-300:])
    py = str(env_dir / "bin" / "python")
    made = set(glob.glob(os.path.join(REPO, "python", "amq", "_amq*.so")))
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    try:
        r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-index", "-e",
                            os.path.join(REPO, "python")], env=env, capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        r = subprocess.run([py, "-c", "import amq; f = amq.Filter(100); f.add('a'); "
                            "print(amq.__file__, 'a' in f)"], env=env, cwd=str(tmp),
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        path, hit = r.stdout.split()
        assert path == os.path.join(REPO, "python", "amq", "__init__.py") and hit == "True"
    finally:
        for so in set(glob.glob(os.path.join(REPO, "python", "amq", "_amq*.so"))) - made:
            os.unlink(so)


def test_one_version():
    """The package's version is the library's it carries (amq_version_string)
    and the one its metadata and wheel name give (pyproject.toml, amq_build)."""
    import amq
    assert amq.__version__ == amq.library_version()
    toml = pathlib.Path(REPO, "python", "pyproject.toml").read_text()
    assert 'version = "%s"' % amq.__version__ in toml
    build = pathlib.Path(REPO, "python", "buildtool", "amq_build.py").read_text()
    assert 'VERSION = "%s"' % amq.__version__ in build
