"""Shared fixtures: the amq tool built beside the package (AMQ_BIN)."""
import os
import shutil

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def amq_bin():
    path = os.environ.get("AMQ_BIN") or os.path.join(REPO, "build", "amq")
    if not os.access(path, os.X_OK):
        pytest.fail("the amq tool is not built at %s (make cli, or set AMQ_BIN)" % path)
    return path


def keys(prefix, n):
    return ["%s-%d" % (prefix, i) for i in range(n)]


@pytest.fixture
def tmp(tmp_path):
    yield tmp_path
    shutil.rmtree(tmp_path, ignore_errors=True)
