"""amq: approximate-membership filters (Bloom, blocked Bloom, partitioned,
cuckoo, scalable) over libamq, with the amq tool's files and keys.

    >>> import amq
    >>> f = amq.Filter(kind="blocked", capacity=1_000_000, fpp=0.01)
    >>> f.add("alice")
    True
    >>> "alice" in f, "bob" in f
    (True, False)
    >>> f.save("users.amq")            # atomic; `amq query users.amq` reads it
    >>> g = amq.open("users.amq", mmap=True)   # read-only, shared pages

Keys: a str is hashed as its UTF-8 bytes, bytes (and any buffer) as they
are - exactly as the amq tool hashes a line - so files move both ways.
Batches (add_many, contains_many, update) take lists, numpy arrays and
buffers, and run without the GIL.  See docs/python.md.
"""
from . import hash
from ._amq import (
    CorruptFileError,
    Error,
    Filter,
    FilterFullError,
    build,
    IncompatibleError,
    ReadOnlyError,
    UnsupportedError,
    import_guava,
    kinds,
    library_version,
    open,
)

__version__ = "0.3.0"

#: The kinds this build of libamq has ('bloom', 'blocked', ..., static and aging kinds).
KINDS = tuple(kinds())

__all__ = [
    "Filter", "open", "build", "import_guava", "kinds", "library_version", "hash", "KINDS",
    "Error", "CorruptFileError", "FilterFullError", "ReadOnlyError",
    "UnsupportedError", "IncompatibleError",
]
