/*
 * _amq.c - the CPython extension behind `import amq`: the Filter type over
 * libamq's generic handle (amq/filter.h), the hash functions, Guava
 * interop and the mapping of library statuses to Python exceptions.
 *
 * Keys: a str is hashed as its UTF-8 bytes, bytes and any other buffer as
 * they are, so a filter answers exactly as the amq tool does for the same
 * lines.  Batches collect pointers to the keys while holding the GIL, then
 * release it for hashing and probing.
 *
 * Threads: every Filter carries a readers-writer lock.  Queries take it
 * shared, writers (add, remove, merge, clear, close) exclusive, so any
 * number of threads may query one filter while at most one changes it,
 * and a filter is never freed under a batch running without the GIL.  A
 * thread never waits for that lock while holding the GIL, and never waits
 * for the GIL while holding the lock.  os.fork() takes every filter's lock
 * first, so that a child never starts with a batch half done or a lock held
 * by a thread it does not have.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AMQ_ADVANCED_API 1 /* the typed handles (amq/advanced.h), called directly */
#include "amq.h"
#include "amq/aging.h"
#include "amq/blocked_bloom.h"
#include "amq/filter.h"
#include "amq/guava.h"
#include "amq/hash.h"
#include "amq/partitioned.h"
#include "amq/static.h"

/* Keys hashed and probed per step of a batch: the hashes stay in L1. */
#define CHUNK 1024

/* ---- exceptions ---------------------------------------------------------- */

static PyObject *Error;          /* amq.Error: base of the library's errors */
static PyObject *CorruptFileError;
static PyObject *FilterFullError;
static PyObject *ReadOnlyError;
static PyObject *UnsupportedError;
static PyObject *IncompatibleError;

/* Raises the Python exception for a library status; returns NULL. */
static PyObject *raise_status(int rc, const amq_errinfo *err, const char *what)
{
    const char *msg = (err != NULL && err->msg[0] != '\0') ? err->msg : amq_strerror(rc);
    PyObject *type = Error;

    switch (rc) {
    case AMQ_EINVAL:
    case AMQ_ERANGE:
    case AMQ_EKIND:
    case AMQ_EHASH:
    case AMQ_EOVERFLOW:
        type = PyExc_ValueError;
        break;
    case AMQ_ENOMEM:
        return PyErr_NoMemory();
    case AMQ_ECORRUPT:
    case AMQ_ETRUNC:
    case AMQ_EVERSION:
    case AMQ_ECHECKSUM:
    case AMQ_EMAGIC:
        type = CorruptFileError;
        break;
    case AMQ_EFULL:
    case AMQ_ELIMIT:
        type = FilterFullError;
        break;
    case AMQ_EREADONLY:
        type = ReadOnlyError;
        break;
    case AMQ_EUNSUPPORTED:
        type = UnsupportedError;
        break;
    case AMQ_EINCOMPAT:
        type = IncompatibleError;
        break;
    case AMQ_EEXIST:
        type = PyExc_FileExistsError;
        break;
    case AMQ_EIO:
    case AMQ_ENOSPC:
        if (err != NULL && err->sys_errno != 0) {
            PyObject *args = Py_BuildValue("(is)", err->sys_errno, msg);
            if (args != NULL) {
                PyErr_SetObject(PyExc_OSError, args);
                Py_DECREF(args);
            }
            return NULL;
        }
        type = PyExc_OSError;
        break;
    default:
        break;
    }
    /* the library names a file itself: its path is not said twice */
    if (what != NULL && what[0] != '\0' &&
        !(strncmp(msg, what, strlen(what)) == 0 && msg[strlen(what)] == ':'))
        PyErr_Format(type, "%s: %s", what, msg);
    else
        PyErr_SetString(type, msg);
    return NULL;
}

/* "a" or "an" before a kind's name: "an expandable filter". */
static const char *article(const char *name)
{
    return strchr("aeiou", name[0]) != NULL ? "an" : "a";
}

/* raise_status for the operation `what` on a filter of `kind`: one the kind
 * does not have names the kind, and the kinds that have it (the library's
 * "operation not supported by this kind of filter" says neither). */
static PyObject *raise_op(int rc, uint32_t kind, const char *what)
{
    const char *name = amq_kind_name(kind) != NULL ? amq_kind_name(kind) : "unknown";
    const char *a = article(name);
    char have[256] = "";
    uint32_t k;

    if (rc != AMQ_EUNSUPPORTED)
        return raise_status(rc, NULL, what);
    if (amq_kind_is_static(kind)) {
        PyErr_Format(UnsupportedError, "%s: %s %s filter is static: amq.build() makes it from "
                     "all its keys at once, and it changes no more", what, a, name);
        return NULL;
    }
    if (strcmp(what, "remove") != 0) {
        PyErr_Format(UnsupportedError, "%s: %s %s filter does not support it", what, a, name);
        return NULL;
    }
    for (k = 1; k < 64; k++)
        if (amq_kind_name(k) != NULL && amq_kind_can_remove(k) && !amq_kind_is_static(k))
            snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%s",
                     have[0] != '\0' ? ", " : "", amq_kind_name(k));
    PyErr_Format(UnsupportedError, "remove: %s %s filter cannot remove keys (the kinds that "
                 "can: %s)", a, name, have);
    return NULL;
}

/* ---- the Filter object --------------------------------------------------- */

typedef struct FilterObject {
    PyObject_HEAD
    amq_filter *f;          /* NULL once closed */
    uint64_t capacity;      /* the partitioned kind's, once asked (its stats count bits) */
    pthread_rwlock_t lock;
    int lock_ready;
    struct FilterObject *prev, *next; /* every live filter (with a lock), for fork */
} FilterObject;

static PyTypeObject FilterType;

/* Writers are preferred: with glibc's default (readers first) a thread
 * that queries in a loop would keep an add waiting forever. */
static int lock_init(pthread_rwlock_t *lock)
{
    pthread_rwlockattr_t attr;
    int ok;
    if (pthread_rwlockattr_init(&attr) != 0)
        return 0;
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    ok = pthread_rwlock_init(lock, &attr) == 0;
    pthread_rwlockattr_destroy(&attr);
    return ok;
}

/* Takes the lock, shared for readers or exclusive for writers: tries
 * without giving up the GIL, blocks only without it. */
static void lock(FilterObject *self, int exclusive)
{
    int rc = exclusive ? pthread_rwlock_trywrlock(&self->lock)
                       : pthread_rwlock_tryrdlock(&self->lock);
    if (rc == 0)
        return;
    Py_BEGIN_ALLOW_THREADS
    if (exclusive)
        pthread_rwlock_wrlock(&self->lock);
    else
        pthread_rwlock_rdlock(&self->lock);
    Py_END_ALLOW_THREADS
}

static void unlock(FilterObject *self)
{
    pthread_rwlock_unlock(&self->lock);
}

/* ---- fork ------------------------------------------------------------------ */

/* Every live filter, linked and unlinked with the GIL held: a fork takes
 * their locks (os.register_at_fork, set up by the module's init). */
static FilterObject *live_filters;

static void link_filter(FilterObject *o)
{
    o->prev = NULL;
    o->next = live_filters;
    if (live_filters != NULL)
        live_filters->prev = o;
    live_filters = o;
}

static void unlink_filter(FilterObject *o)
{
    if (o->prev != NULL)
        o->prev->next = o->next;
    else
        live_filters = o->next;
    if (o->next != NULL)
        o->next->prev = o->prev;
}

/* The filters whose locks a fork holds, from before_fork to its after hook. */
static FilterObject **fork_held;
static size_t fork_held_n;

static int by_address(const void *a, const void *b)
{
    const FilterObject *x = *(FilterObject *const *)a, *y = *(FilterObject *const *)b;
    return x < y ? -1 : x > y;
}

/* os.fork()'s "before" hook: every filter's lock, exclusive, so that no batch
 * runs (without the GIL, in another thread) while the process is copied: the
 * child would find the filter half changed and its lock held forever.  In
 * address order, as merges take two, so that they cannot hold one each. */
static PyObject *mod_before_fork(PyObject *m, PyObject *unused)
{
    FilterObject *o, **held;
    size_t n = 0, i;
    (void)m;
    (void)unused;
    for (o = live_filters; o != NULL; o = o->next)
        n++;
    held = PyMem_Malloc((n > 0 ? n : 1) * sizeof(*held));
    if (held == NULL)
        return PyErr_NoMemory();
    for (i = 0, o = live_filters; o != NULL; o = o->next, i++) {
        Py_INCREF(o); /* not freed while this waits for a lock without the GIL */
        held[i] = o;
    }
    qsort(held, n, sizeof(*held), by_address);
    for (i = 0; i < n; i++)
        lock(held[i], 1);
    fork_held = held;
    fork_held_n = n;
    Py_RETURN_NONE;
}

/* Gives back what before_fork took; in the child, every filter's lock is made
 * anew: a thread that was waiting for one, or holding one that before_fork
 * did not know of yet, is not in the child. */
static PyObject *after_fork(int child)
{
    FilterObject **held = fork_held, *o;
    size_t n = fork_held_n, i;
    fork_held = NULL;
    fork_held_n = 0;
    if (child)
        for (o = live_filters; o != NULL; o = o->next)
            lock_init(&o->lock);
    for (i = 0; i < n; i++) {
        if (!child)
            unlock(held[i]);
        Py_DECREF(held[i]);
    }
    PyMem_Free(held);
    Py_RETURN_NONE;
}

static PyObject *mod_after_fork_parent(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return after_fork(0);
}

static PyObject *mod_after_fork_child(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return after_fork(1);
}

/* The handle, or NULL with ValueError for a closed filter.  Call with the
 * lock held. */
static amq_filter *handle(FilterObject *self)
{
    if (self->f == NULL)
        PyErr_SetString(PyExc_ValueError, "operation on a closed filter");
    return self->f;
}

/* Takes the lock (exclusive for writers) and returns the handle; for a
 * closed filter, gives the lock back and returns NULL with ValueError. */
static amq_filter *acquire(FilterObject *self, int exclusive)
{
    lock(self, exclusive);
    if (handle(self) == NULL) {
        unlock(self);
        return NULL;
    }
    return self->f;
}

/* The filter's stats, read under the shared lock: 0, or -1 with
 * ValueError for a closed filter. */
static int read_stats(FilterObject *self, amq_stats *st)
{
    if (acquire(self, 0) == NULL)
        return -1;
    amq_filter_stats(self->f, st);
    unlock(self);
    return 0;
}

/* A new object of type (Filter or a subclass) owning f (NULL: none yet,
 * for Filter.__init__ to make). */
static FilterObject *wrap_as(PyTypeObject *type, amq_filter *f)
{
    FilterObject *o = (FilterObject *)type->tp_alloc(type, 0);
    if (o == NULL) {
        amq_filter_free(f);
        return NULL;
    }
    o->f = f;
    o->capacity = 0;
    o->lock_ready = lock_init(&o->lock);
    if (!o->lock_ready) {
        Py_DECREF(o);
        return (FilterObject *)PyErr_NoMemory();
    }
    link_filter(o);
    return o;
}

#define wrap(f) wrap_as(&FilterType, (f))

static void Filter_dealloc(FilterObject *self)
{
    amq_filter_free(self->f);
    if (self->lock_ready) {
        unlink_filter(self);
        pthread_rwlock_destroy(&self->lock);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Filter_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)args;
    (void)kw;
    return (PyObject *)wrap_as(type, NULL);
}

/* ---- keys ---------------------------------------------------------------- */

/* One key's bytes.  Keeps what holds them alive: a reference for str and
 * bytes (immutable), a buffer export for anything else (a bytearray cannot
 * be resized while exported). */
typedef struct {
    const char *p;
    Py_ssize_t len;
    PyObject *ref;
    Py_buffer view;
    int has_view;
} keyref;

static int key_get(PyObject *o, keyref *k)
{
    k->ref = NULL;
    k->has_view = 0;
    if (PyUnicode_Check(o)) {
        k->p = PyUnicode_AsUTF8AndSize(o, &k->len);
        if (k->p == NULL)
            return -1;
    } else if (PyBytes_Check(o)) {
        k->p = PyBytes_AS_STRING(o);
        k->len = PyBytes_GET_SIZE(o);
    } else if (PyObject_CheckBuffer(o)) {
        if (PyObject_GetBuffer(o, &k->view, PyBUF_CONTIG_RO) != 0)
            return -1;
        k->has_view = 1;
        k->p = k->view.buf;
        k->len = k->view.len;
        return 0;
    } else {
        PyErr_Format(PyExc_TypeError, "a key must be str, bytes or a buffer, not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_INCREF(o);
    k->ref = o;
    return 0;
}

static void key_put(keyref *k)
{
    if (k->has_view)
        PyBuffer_Release(&k->view);
    Py_XDECREF(k->ref);
}

/* Takes key's bytes, then the lock as acquire does: the handle, or NULL
 * with an exception and nothing held.  Give back with unlock, then
 * key_put. */
static amq_filter *acquire_key(FilterObject *self, PyObject *key, int exclusive, keyref *k)
{
    if (key_get(key, k) != 0)
        return NULL;
    if (acquire(self, exclusive) == NULL) {
        key_put(k);
        return NULL;
    }
    return self->f;
}

/*
 * A batch of keys in one of four shapes:
 *  - a sequence of str/bytes/buffers, taken CHUNK keys at a time with the
 *    GIL held (memory stays O(CHUNK) whatever the batch's size);
 *  - a buffer of fixed-width keys (numpy 'S<w>' or void dtype, a 2-D byte
 *    array, or any buffer with width=w); numpy 'S' arrays drop trailing
 *    NULs as numpy itself does when an element is read;
 *  - a buffer of uint64 values, taken as 64-bit hashes (blocked kind).
 */
enum { KEYS_LIST, KEYS_FIXED, KEYS_FIXED_S, KEYS_U64 };

typedef struct {
    int shape;
    size_t n;
    PyObject *items;   /* KEYS_LIST: a list or tuple (PySequence_Fast) */
    Py_buffer view;    /* the others */
    int has_view;
    size_t width;
    void *copy;        /* a strided buffer's keys made contiguous */
} keyset;

static void keyset_release(keyset *ks)
{
    Py_CLEAR(ks->items);
    if (ks->has_view) {
        PyBuffer_Release(&ks->view);
        ks->has_view = 0;
    }
    PyMem_Free(ks->copy);
    ks->copy = NULL;
}

static int is_u64_format(const char *fmt)
{
    if (fmt == NULL)
        return 0;
    if (*fmt == '<' || *fmt == '=' || *fmt == '@')
        fmt++;
    return strcmp(fmt, "Q") == 0 || (sizeof(unsigned long) == 8 && strcmp(fmt, "L") == 0);
}

/* An integer element (numpy int8 .. uint64, either byte order). */
static int is_int_format(const char *fmt)
{
    if (fmt == NULL)
        return 0;
    if (*fmt == '<' || *fmt == '>' || *fmt == '=' || *fmt == '@' || *fmt == '!')
        fmt++;
    return fmt[0] != '\0' && fmt[1] == '\0' && strchr("bBhHiIlLqQnN", fmt[0]) != NULL;
}

/* numpy str ('<U8' exports "8w") and object arrays: read element by element. */
static int is_elementwise_format(const char *fmt)
{
    size_t n;
    if (fmt == NULL)
        return 0;
    if (*fmt == '<' || *fmt == '>' || *fmt == '=' || *fmt == '@' || *fmt == '!')
        fmt++;
    n = strspn(fmt, "0123456789");
    return strcmp(fmt + n, "w") == 0 || strcmp(fmt, "O") == 0;
}

/* numpy's 'S8' exports the format "8s". */
static int is_bytes_format(const char *fmt, size_t itemsize)
{
    char *end;
    unsigned long w;
    if (fmt == NULL)
        return 0;
    if (strcmp(fmt, "s") == 0)
        return itemsize == 1;
    w = strtoul(fmt, &end, 10);
    return end != fmt && strcmp(end, "s") == 0 && w == itemsize;
}

/* numpy's void 'V12' exports "12x" (or "V" formats elsewhere). */
static int is_void_format(const char *fmt, size_t itemsize)
{
    char *end;
    unsigned long w;
    if (fmt == NULL)
        return 0;
    if (fmt[0] == 'V')
        return 1;
    w = strtoul(fmt, &end, 10);
    return strcmp(end, "x") == 0 && (end == fmt ? itemsize == 1 : w == itemsize);
}

/* A contiguous view of o; a strided one (a numpy slice) is copied. */
static int get_contiguous(PyObject *o, keyset *ks)
{
    Py_buffer *v = &ks->view;
    if (PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0) {
        ks->has_view = 1;
        return 0;
    }
    PyErr_Clear();
    if (PyObject_GetBuffer(o, v, PyBUF_RECORDS_RO) != 0)
        return -1;
    ks->has_view = 1;
    ks->copy = PyMem_Malloc(v->len > 0 ? (size_t)v->len : 1);
    if (ks->copy == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (PyBuffer_ToContiguous(ks->copy, v, v->len, 'C') != 0)
        return -1;
    v->buf = ks->copy; /* shape, format and itemsize stay those of o */
    return 0;
}

static int keyset_from_buffer(PyObject *o, Py_ssize_t width, int hashes, keyset *ks)
{
    Py_buffer *v = &ks->view;
    if (get_contiguous(o, ks) != 0)
        return -1;
    if (hashes) {
        /* Hashes only when the caller says so: an integer array is keys. */
        if (width > 0 || v->ndim != 1 || v->itemsize != 8 || !is_u64_format(v->format)) {
            PyErr_SetString(PyExc_TypeError,
                            "hashes=True takes a 1-D numpy uint64 array of 64-bit hashes "
                            "(and no width)");
            return -1;
        }
        ks->shape = KEYS_U64;
        ks->width = 8;
        ks->n = (size_t)v->shape[0];
        return 0;
    }
    if (width > 0) {
        if (v->len % width != 0) {
            PyErr_Format(PyExc_ValueError,
                         "a buffer of %zd bytes does not hold keys of width %zd", v->len,
                         width);
            return -1;
        }
        ks->shape = KEYS_FIXED;
        ks->width = (size_t)width;
        ks->n = (size_t)(v->len / width);
        return 0;
    }
    if (v->ndim == 1 && is_int_format(v->format)) {
        /* Integer IDs are keys: each element's bytes as the array holds
         * them (arr.view('V<itemsize>')), on every kind. */
        ks->shape = KEYS_FIXED;
        ks->width = (size_t)v->itemsize;
        ks->n = (size_t)v->shape[0];
        return 0;
    }
    if (v->ndim == 1 && is_bytes_format(v->format, (size_t)v->itemsize)) {
        ks->shape = KEYS_FIXED_S;
        ks->width = (size_t)v->itemsize;
        ks->n = (size_t)v->shape[0];
        return 0;
    }
    if (v->ndim == 1 && is_void_format(v->format, (size_t)v->itemsize)) {
        ks->shape = KEYS_FIXED;
        ks->width = (size_t)v->itemsize;
        ks->n = (size_t)v->shape[0];
        return 0;
    }
    if (v->ndim == 2 && v->itemsize == 1 && v->format != NULL &&
        (strcmp(v->format, "B") == 0 || strcmp(v->format, "b") == 0 ||
         strcmp(v->format, "c") == 0)) {
        ks->shape = KEYS_FIXED;
        ks->width = (size_t)v->shape[1];
        ks->n = (size_t)v->shape[0];
        return 0;
    }
    PyErr_Format(PyExc_TypeError,
                 "cannot tell the keys of a buffer of format '%s' and %d dimensions: keys "
                 "are str/bytes sequences, numpy arrays of dtype 'S<N>', 'U<N>', 'V<N>', "
                 "object (of str/bytes) or integers, 2-D uint8 rows, or a buffer with "
                 "width=N",
                 v->format ? v->format : "B", v->ndim);
    return -1;
}

/* str, bytes and bytearray are single keys, not batches: refuse them as a
 * batch so that f.add_many("abc") does not add "a", "b", "c" (a bytearray
 * was read as a sequence of ints: "a key must be ..., not int"). */
static int keyset_init(PyObject *o, Py_ssize_t width, int hashes, keyset *ks)
{
    memset(ks, 0, sizeof(*ks));
    if (width < 0) { /* (0 is the default: no width) */
        PyErr_Format(PyExc_ValueError, "width=%zd: a key width is 1 or more bytes", width);
        return -1;
    }
    if (hashes && !PyObject_CheckBuffer(o)) {
        PyErr_SetString(PyExc_TypeError, "hashes=True takes a 1-D numpy uint64 array of "
                        "64-bit hashes");
        return -1;
    }
    if (width > 0 || hashes)
        return keyset_from_buffer(o, width, hashes, ks);
    if (PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o)) {
        PyErr_Format(PyExc_TypeError,
                     "a batch of keys must be a sequence or an array, not a single "
                     "%.50s (use add/contains for one key%s)", Py_TYPE(o)->tp_name,
                     PyUnicode_Check(o) ? "" : ", or width=N for keys of N bytes back to back");
        return -1;
    }
    if (PyObject_CheckBuffer(o) && !PyByteArray_Check(o)) {
        Py_buffer peek;
        if (PyObject_GetBuffer(o, &peek, PyBUF_RECORDS_RO) == 0) {
            int each = peek.ndim == 1 && is_elementwise_format(peek.format);
            PyBuffer_Release(&peek);
            if (!each)
                return keyset_from_buffer(o, 0, 0, ks);
        } else if (PySequence_Check(o)) {
            PyErr_Clear(); /* numpy object arrays export no buffer */
        } else {
            return -1;
        }
        /* str and object arrays (pandas' .values): element by element */
    }
    ks->items = PySequence_Fast(o, "keys must be a sequence, an iterable or a buffer");
    if (ks->items == NULL)
        return -1;
    ks->shape = KEYS_LIST;
    ks->n = (size_t)PySequence_Fast_GET_SIZE(ks->items);
    return 0;
}

/*
 * A list batch is hashed with the GIL held, SLICE keys at a time, and each
 * slice probed with the GIL released once: taking the GIL back waits for
 * another busy thread's switch interval (5 ms by default), so it is taken
 * back once per slice rather than once per few keys, and a list shorter
 * than RELEASE_MIN keeps the GIL throughout (its probes take less than
 * that wait would).  Hashing under the GIL also means no key needs to be
 * kept alive while it is released.
 */
#define SLICE ((size_t)1 << 20)
#define RELEASE_MIN ((size_t)1 << 18)

/* How many times list batches gave up the GIL (read by the tests through
 * _list_gil_releases: each release may wait a switch interval to return). */
static _Atomic Py_ssize_t list_gil_releases;

typedef struct {
    const amq_filter *f;   /* the filter's hash, or ... */
    uint32_t algo;         /* ... this algorithm and seed (builders) */
    uint64_t seed;
} hasher;

static inline amq_hash128 hash_with(const hasher *hs, const void *p, size_t len)
{
    return hs->f != NULL ? amq_filter_hash(hs->f, p, len) : amq_hash_key(hs->algo, hs->seed, p, len);
}

/* Hashes keys [start, start + m) of a list batch into h (GIL held).  The
 * number hashed - fewer if the list shrank - or -1 with an exception. */
static Py_ssize_t hash_slice(const keyset *ks, size_t start, size_t m, amq_hash128 *h,
                             const hasher *hs)
{
    size_t j;
    for (j = 0; j < m; j++) {
        keyref k;
        if (start + j >= (size_t)PySequence_Fast_GET_SIZE(ks->items))
            break;
        if (key_get(PySequence_Fast_ITEMS(ks->items)[start + j], &k) != 0)
            return -1;
        h[j] = hash_with(hs, k.p, (size_t)k.len);
        key_put(&k);
    }
    return (Py_ssize_t)j;
}

/* ---- batched work --------------------------------------------------------- */

/* Whole-width keys back to back: a fixed array, or an 'S' array none of
 * whose keys ends in NUL (then numpy's reading drops nothing). */
static int keyset_is_packed(const keyset *ks)
{
    const char *p = ks->view.buf;
    size_t i;
    if (ks->shape == KEYS_FIXED)
        return 1;
    if (ks->shape != KEYS_FIXED_S || ks->width == 0)
        return 0;
    for (i = 0; i < ks->n; i++)
        if (p[i * ks->width + ks->width - 1] == '\0')
            return 0;
    return 1;
}

/* Key i of a buffer batch, NULs dropped for numpy 'S' arrays. */
static inline const char *fixed_key(const keyset *ks, size_t i, size_t *len)
{
    const char *p = (const char *)ks->view.buf + i * ks->width;
    size_t w = ks->width;
    if (ks->shape == KEYS_FIXED_S)
        while (w > 0 && p[w - 1] == '\0')
            w--;
    *len = w;
    return p;
}

/* Cuckoo kinds store a copy of the key at every add (CF.ADD): one skipped
 * because a fingerprint matched would answer absent once the key it
 * collided with is removed. */
static int stores_copies(const amq_filter *f)
{
    const uint32_t kind = amq_filter_kind(f);
    return amq_kind_keeps_copies(kind) && amq_kind_can_remove(kind);
}

/* A kind whose add stores a copy without looking but removes nothing
 * (quotient, pocket): a key that may be present already is not stored again. */
static int asks_first(const amq_filter *f)
{
    const uint32_t kind = amq_filter_kind(f);
    return amq_kind_keeps_copies(kind) && !amq_kind_can_remove(kind);
}

/* One key's copies as a kind that stores a copy at every add limits them
 * (cli/cmd_add.c says it alike). */
static const char *copies_limit(uint32_t kind)
{
    if (kind == AMQ_KIND_EXPANDABLE)
        return "an expandable filter keeps 32 of one key";
    if (kind == AMQ_KIND_CUCKOO)
        return "a cuckoo filter keeps 2b + 1 of one key, b its bucket size";
    return "a scalable cuckoo filter keeps one key's copies in its two buckets of the newest "
           "link, and grows for no key's copies";
}

/* FilterFullError for an add of the key of hash h refused with AMQ_EFULL
 * by a kind that stores a copy at every add, saying why as the library
 * reads it (amq_filter_refusal); 0 when that is only "filter is full" (for
 * raise_op).  who: "this key", "a key of the batch".  Call with the
 * lock held: the library's "filter is full" said the filter was full at 9
 * items of 100. */
static int raise_refusal(const amq_filter *f, amq_hash128 h, const char *who)
{
    const uint32_t kind = amq_filter_kind(f);
    uint32_t why = AMQ_REFUSAL_FULL;
    if (stores_copies(f) && amq_filter_refusal_hash(f, h, &why) != AMQ_OK)
        why = AMQ_REFUSAL_FULL; /* out of memory to count: "filter is full" */
    if (why == AMQ_REFUSAL_COPIES || why == AMQ_REFUSAL_OTHER_COPIES) {
        /* the cuckoo kind refuses every add while its spare slot holds another key's copy */
        PyErr_Format(FilterFullError, "add: %s is stored too many times already (each add "
                     "keeps a copy, remove() takes one back; %s)",
                     why == AMQ_REFUSAL_COPIES ? who : "a key of the filter",
                     copies_limit(kind));
        return 1;
    }
    if (why == AMQ_REFUSAL_FULL && kind == AMQ_KIND_EXPANDABLE) { /* it grows: a crowd */
        PyErr_Format(FilterFullError, "add: too many keys fall in the bucket of %s (an "
                     "expandable filter keeps 256 stashed entries of a full bucket: keys "
                     "crowded by a weak hash or chosen against the seed)",
                     who);
        return 1;
    }
    return 0;
}

/* Probes or adds m hashed keys at out.  Returns the first error of an add,
 * else AMQ_OK.  out[i] of an add is 1 when the filter answered absent for
 * the key before it (the key is new), for every kind. */
static int probe(amq_filter *f, int add, const amq_hash128 *h, size_t m, uint8_t *out,
                 const uint64_t *now_ms, amq_hash128 *refused)
{
    size_t i;
    if (now_ms != NULL)
        return amq_aging_contains_batch_at(f, h, m, out, *now_ms);
    if (add && asks_first(f)) {
        for (i = 0; i < m; i++) {
            int rc = amq_filter_add_unique_hash(f, h[i]);
            if (rc < 0)
                return rc;
            out[i] = rc == 1;
        }
        return AMQ_OK;
    }
    if (add && stores_copies(f)) {
        for (i = 0; i < m; i++) {
            int was = amq_filter_contains_hash(f, h[i]);
            int rc = amq_filter_add_hash(f, h[i]);
            if (rc < 0) {
                *refused = h[i];
                return rc;
            }
            out[i] = was == 0;
        }
        return AMQ_OK;
    }
    return add ? amq_filter_add_batch(f, h, m, out) : amq_filter_contains_batch(f, h, m, out);
}

/* Where a batch's hashes go: probed in or added to a filter (out[i] the
 * answer for key i), or fed to a builder. */
typedef struct {
    amq_filter *f;
    int add;
    uint8_t *out;
    const uint64_t *now_ms;
    amq_builder *bld;
    amq_hash128 *refused; /* adds: the hash of a key refused */
} sink;

/* Hands m hashes, those of keys [i, i + m), to the sink.  Returns a status. */
static int sink_put(const sink *s, const amq_hash128 *h, size_t m, size_t i)
{
    if (s->bld != NULL)
        return amq_builder_add_batch(s->bld, h, m);
    return probe(s->f, s->add, h, m, s->out + i, s->now_ms, s->refused);
}

/* A buffer batch hashed CHUNK keys at a time, each chunk handed to the
 * sink (called without the GIL).  Returns a status. */
static int sink_buffer(const keyset *ks, const hasher *hs, const sink *s)
{
    amq_hash128 h[CHUNK];
    size_t i, j, m, len;
    int rc = AMQ_OK;

    for (i = 0; i < ks->n && rc == AMQ_OK; i += m) {
        m = ks->n - i < CHUNK ? ks->n - i : CHUNK;
        for (j = 0; j < m; j++) {
            const char *p = fixed_key(ks, i + j, &len);
            h[j] = hash_with(hs, p, len);
        }
        rc = sink_put(s, h, m, i);
    }
    return rc;
}

/* A list batch hashed with the GIL held, each slice handed to the sink as
 * SLICE says.  Returns a status, or -1 with an exception set (-1 is also
 * AMQ_EINVAL: PyErr_Occurred tells them apart). */
static int sink_list(const keyset *ks, const hasher *hs, const sink *s)
{
    amq_hash128 *h;
    size_t i, want;
    Py_ssize_t m = 0;
    int rc = AMQ_OK;

    h = PyMem_Malloc((ks->n < SLICE ? (ks->n > 0 ? ks->n : 1) : SLICE) * sizeof(*h));
    if (h == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < ks->n && rc == AMQ_OK; i += (size_t)m) {
        want = ks->n - i < SLICE ? ks->n - i : SLICE;
        m = hash_slice(ks, i, want, h, hs);
        if (m < 0) {
            rc = -1;
            break;
        }
        if ((size_t)m >= RELEASE_MIN) {
            list_gil_releases++;
            Py_BEGIN_ALLOW_THREADS
            rc = sink_put(s, h, (size_t)m, i);
            Py_END_ALLOW_THREADS
        } else {
            rc = sink_put(s, h, (size_t)m, i);
        }
        if ((size_t)m < want)
            break; /* the list shrank */
    }
    PyMem_Free(h);
    return rc;
}

/* A buffer batch in one pass without the GIL.  Returns a status. */
static int run_buffer(const keyset *ks, const hasher *hs, const sink *s)
{
    struct amq_blocked *blk = amq_filter_blocked(s->f);
    uint8_t *out = s->out;

    if (s->now_ms == NULL &&
        (ks->shape == KEYS_U64 || (blk != NULL && keyset_is_packed(ks)))) {
        if (!s->add)
            return ks->shape == KEYS_U64
                       ? amq_blocked_contains_batch64(blk, ks->view.buf, ks->n, out, NULL)
                       : amq_blocked_contains_batch_fixed(blk, ks->view.buf, ks->width, ks->n,
                                                          out, NULL);
        return ks->shape == KEYS_U64
                   ? amq_blocked_add_batch64(blk, ks->view.buf, ks->n, out, NULL)
                   : amq_blocked_add_batch_fixed(blk, ks->view.buf, ks->width, ks->n, out, NULL);
    }
    /* any kind's queries of packed keys: hashed inside its query loop */
    if (s->now_ms == NULL && !s->add && keyset_is_packed(ks))
        return amq_filter_contains_batch_fixed(s->f, ks->view.buf, ks->width, ks->n, out,
                                               NULL);
    return sink_buffer(ks, hs, s);
}

/* Runs a batch on f, whose lock the caller holds (shared for queries,
 * exclusive for adds).  A buffer batch runs without the GIL; a list batch
 * as SLICE says.  Returns 0, or -1 with an exception set. */
static int run_batch(amq_filter *f, int add, const keyset *ks, uint8_t *out,
                     const uint64_t *now_ms)
{
    hasher hs = {f, 0, 0};
    amq_hash128 refused = {0, 0};
    sink s = {f, add, out, now_ms, NULL, &refused};
    int rc;

    if (ks->shape == KEYS_LIST) {
        rc = sink_list(ks, &hs, &s);
    } else {
        Py_BEGIN_ALLOW_THREADS
        rc = run_buffer(ks, &hs, &s);
        Py_END_ALLOW_THREADS
    }
    if (rc == AMQ_EFULL && add && !PyErr_Occurred())
        (void)raise_refusal(f, refused, "a key of the batch");
    if (rc < 0 && !PyErr_Occurred())
        raise_op(rc, amq_filter_kind(f), add ? "add" : "query");
    return rc < 0 ? -1 : 0;
}

/* 64-bit hashes (hashes=True) go only to the kind that takes them. */
static int check_u64(amq_filter *f, const keyset *ks)
{
    if (ks->shape == KEYS_U64 && amq_filter_blocked(f) == NULL) {
        PyErr_Format(UnsupportedError,
                     "hashes=True: only the blocked kind takes 64-bit hashes (this filter is "
                     "%s); without hashes=True an integer array is keys",
                     amq_kind_name(amq_filter_kind(f)));
        return -1;
    }
    return 0;
}

/* ---- capacity: one rule with `amq add` -------------------------------------------- */

/* Items and capacity as the tool counts them (cli/kinds.c), without
 * amq_filter_stats where it counts bits (the Bloom kinds): f is self's
 * filter or a copy of it (same capacity). */
static void counts(FilterObject *self, amq_filter *f, uint64_t *items, uint64_t *capacity)
{
    struct amq_blocked *b = amq_filter_blocked(f);
    amq_bloom *bl = amq_filter_bloom(f);
    struct amq_partitioned *pt = amq_filter_partitioned(f);
    amq_stats st;
    if (pt != NULL && self->capacity != 0) {
        *items = amq_partitioned_items(pt);
        *capacity = self->capacity;
        return;
    }
    if (b != NULL) {
        amq_blocked_params p;
        amq_blocked_get_params(b, &p);
        *items = amq_blocked_items(b);
        *capacity = p.capacity;
        return;
    }
    if (bl != NULL) {
        amq_bloom_params p;
        amq_bloom_get_params(bl, &p);
        *items = amq_bloom_items(bl);
        *capacity = p.capacity;
        return;
    }
    amq_filter_stats(f, &st);
    *items = st.items;
    *capacity = st.capacity;
    if (pt != NULL)
        self->capacity = st.capacity;
}

/* Kinds sized once: past capacity their false-positive rate climbs (the
 * scalable kinds grow, an aging filter holds only its window). */
static int fixed_size(const amq_filter *f)
{
    return amq_kind_has_capacity(amq_filter_kind(f));
}

/* FilterFullError for an add refused at capacity (amq add's message). */
static void raise_overfill(const amq_filter *f, uint64_t items, uint64_t capacity)
{
    amq_stats st;
    char msg[320];
    amq_filter_stats(f, &st);
    snprintf(msg, sizeof(msg),
             "%llu items would be over the filter's capacity of %llu (false-positive rate "
             "%.3g, created for %.3g); nothing changed: use a larger filter, or "
             "allow_overfill=True",
             (unsigned long long)items, (unsigned long long)capacity, st.fpp_now,
             st.fpp_target);
    PyErr_SetString(FilterFullError, msg);
}

/* ---- Filter methods ------------------------------------------------------ */

/* Integers that refuse negative and too large values (K and I would wrap
 * them silently), with errors that name the parameter: one O& converter
 * per name, since a converter is told nothing but the object. */
static int conv_uint(PyObject *o, void *out, const char *name, int bits)
{
    unsigned long long v;
    PyObject *i = PyNumber_Index(o); /* numpy integers too; not floats */
    if (i == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s must be an integer, not %.100s", name,
                         Py_TYPE(o)->tp_name);
        }
        return 0;
    }
    v = PyLong_AsUnsignedLongLong(i);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
            Py_DECREF(i);
            return 0;
        }
        PyErr_Clear();
    } else if (bits == 64 || v <= UINT32_MAX) {
        Py_DECREF(i);
        if (bits == 64)
            *(uint64_t *)out = v;
        else
            *(uint32_t *)out = (uint32_t)v;
        return 1;
    }
    PyErr_Format(PyExc_ValueError, "%s must be an integer in [0, 2**%d), not %R", name, bits, i);
    Py_DECREF(i);
    return 0;
}

#define NAMED_CONV(name, bits)                                                                     \
    static int conv_##name(PyObject *o, void *out)                                                 \
    {                                                                                              \
        return conv_uint(o, out, #name, bits);                                                     \
    }
NAMED_CONV(capacity, 64)
NAMED_CONV(seed, 64)
NAMED_CONV(window_ms, 64)
NAMED_CONV(now_ms, 64)
NAMED_CONV(memory, 64)
NAMED_CONV(fingerprint_bits, 32)
NAMED_CONV(bucket_size, 32)
NAMED_CONV(max_kicks, 32)
NAMED_CONV(expansion, 32)
NAMED_CONV(partitions, 32)
NAMED_CONV(threads, 32)
NAMED_CONV(arity, 32)
#undef NAMED_CONV

/* 0, or -1 with a ValueError naming the value when v is NaN or infinite
 * (a NaN would pass every range check written as a refusal of v <= 0 or
 * v >= 1). */
static int finite_arg(const char *name, double v)
{
    if (isfinite(v))
        return 0;
    PyErr_Format(PyExc_ValueError, "%s must be a finite number, not %s", name,
                 isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    return -1;
}

/* 0, or -1 with a ValueError naming the hash when it cannot take seed
 * (murmur3's seeds are 32-bit, RedisBloom's hash has none). */
static int check_seed(uint32_t algo, uint64_t seed)
{
    if (amq_hash_check(algo, seed) != AMQ_ERANGE)
        return 0; /* an unknown algorithm is the library's to refuse */
    PyErr_Format(PyExc_ValueError, "hash %s cannot take seed %llu (its seeds: %s)",
                 amq_hash_algo_name(algo), (unsigned long long)seed,
                 algo == AMQ_HASH_MURMUR3 ? "0 to 2**32 - 1" : "0");
    return -1;
}

static int parse_kind(const char *name, uint32_t *kind)
{
    if (amq_kind_from_name(name, kind) != AMQ_OK) {
        PyErr_Format(PyExc_ValueError, "unknown kind '%s'", name);
        return -1;
    }
    return 0;
}

/* Keywords that only some kinds read (the library's table, amq_option_kinds, which the tool
 * and the Redis module refuse by too): given to another kind, refused rather than ignored. */
static const char *const kind_params[] = {"bits_per_key", "fingerprint_bits", "bucket_size",
                                          "max_kicks",    "expansion",        "nonscaling",
                                          "redisbloom",   "partitions",       "guava",
                                          "window_ms",    "rate"};

static int check_kind_params(PyObject *kw, const char *kind)
{
    uint32_t k;
    size_t i;
    if (kw == NULL || amq_kind_from_name(kind, &k) != AMQ_OK)
        return 0;
    for (i = 0; i < sizeof(kind_params) / sizeof(kind_params[0]); i++) {
        PyObject *v = PyDict_GetItemString(kw, kind_params[i]);
        if (v != NULL && !amq_option_applies(kind_params[i], k)) {
            PyErr_Format(PyExc_ValueError, "%s applies to the kinds%s; a %s filter has no %s",
                         kind_params[i], amq_option_kinds(kind_params[i]), kind, kind_params[i]);
            return -1;
        }
    }
    return 0;
}

/* ValueError for a hash name the library does not know, naming those it does; -1. */
static int unknown_hash(const char *name)
{
    char names[256];
    amq_hash_algo_names(names, sizeof names);
    PyErr_Format(PyExc_ValueError, "unknown hash '%s' (%s)", name, names);
    return -1;
}

/* amq.hash._hash_names(): the library's hash names, ", "-joined (key()'s docstring). */
static PyObject *h_names(PyObject *m, PyObject *unused)
{
    char names[256];
    (void)m;
    (void)unused;
    amq_hash_algo_names(names, sizeof names);
    return PyUnicode_FromString(names);
}

static int Filter_init(FilterObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"capacity", "fpp", "kind", "bits_per_key", "hash", "seed",
                            "fingerprint_bits", "bucket_size", "max_kicks", "expansion",
                            "nonscaling", "redisbloom", "partitions", "threads", "guava",
                            "window_ms", "rate", NULL};
    const char *kind_name = "bloom", *hash_name = NULL;
    uint64_t capacity = 0, seed = 0, window_ms = 0;
    PyObject *cap_obj = NULL, *fpp_obj = NULL; /* NULL: not given (the kind's default, 0.01) */
    double fpp = 0.01, bpk = 0.0, rate = 0.0;
    uint32_t fpbits = 0, bucket = 0, kicks = 0, expansion = 0, partitions = 0, threads = 0;
    int nonscaling = 0, redisbloom = 0, guava = 0, rc, fpp_given;
    amq_config cfg;
    amq_errinfo err;
    amq_filter *f = NULL;
    uint32_t kind, algo;

    if (PyTuple_GET_SIZE(args) > 0 && PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
        PyErr_SetString(PyExc_TypeError, "Filter(capacity, fpp, *, kind=...): the kind is a "
                        "keyword, e.g. Filter(1000, 0.01, kind='blocked')");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO$sdzO&O&O&O&O&ppO&O&pO&d", names,
                                     &cap_obj, &fpp_obj, &kind_name, &bpk, &hash_name,
                                     conv_seed, &seed, conv_fingerprint_bits, &fpbits,
                                     conv_bucket_size, &bucket, conv_max_kicks, &kicks,
                                     conv_expansion, &expansion, &nonscaling, &redisbloom,
                                     conv_partitions, &partitions, conv_threads, &threads,
                                     &guava, conv_window_ms, &window_ms, &rate))
        return -1;
    if (self->f != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Filter.__init__ called twice");
        return -1;
    }
    /* (2**64 - 1 once stood for "not given": it made the default filter) */
    if (cap_obj != NULL && !conv_capacity(cap_obj, &capacity))
        return -1;
    fpp_given = fpp_obj != NULL;
    if (fpp_given) {
        fpp = PyFloat_AsDouble(fpp_obj); /* as "d" converts */
        if (fpp == -1.0 && PyErr_Occurred())
            return -1;
    }
    if (finite_arg("fpp", fpp) != 0 || finite_arg("bits_per_key", bpk) != 0 ||
        finite_arg("rate", rate) != 0)
        return -1;
    if (parse_kind(kind_name, &kind) != 0)
        return -1;
    if (amq_kind_is_static(kind)) {
        /* the library's message names its C calls and the tool's */
        PyErr_Format(UnsupportedError, "a %s filter is static: amq.build(keys, kind='%s') "
                     "makes it from all its keys at once", amq_kind_name(kind),
                     amq_kind_name(kind));
        return -1;
    }
    if (check_kind_params(kw, amq_kind_name(kind)) != 0)
        return -1;
    /* No hash given: the kind's default (amq_config_init's). */
    amq_config_init(&cfg, kind);
    algo = cfg.hash_algo;
    if (cap_obj == NULL) /* 1,000,000; expandable, quotient and pocket start at 4,096 */
        capacity = cfg.capacity;
    if (cap_obj != NULL && window_ms != 0) {
        /* as `amq create` refuses --capacity beside --window */
        PyErr_SetString(PyExc_ValueError, "an aging filter by time holds the adds of its "
                        "window (window_ms times rate): it takes no capacity");
        return -1;
    }
    if (hash_name != NULL && amq_hash_algo_from_name(hash_name, &algo) != AMQ_OK)
        return unknown_hash(hash_name);
    memset(&err, 0, sizeof(err));
    if (guava) {
        amq_bloom_params p;
        amq_bloom *b;
        if (kind != AMQ_KIND_BLOOM) {
            PyErr_SetString(PyExc_ValueError, "guava=True makes a classic Bloom filter "
                            "(kind='bloom')");
            return -1;
        }
        /* Guava's hashing and sizing: what would set others is refused, as
         * `amq build --guava` refuses --hash and --seed */
        if (hash_name != NULL || PyDict_GetItemString(kw, "seed") != NULL ||
            PyDict_GetItemString(kw, "bits_per_key") != NULL) {
            PyErr_SetString(PyExc_ValueError, "guava=True makes a Bloom filter hashed and "
                            "sized as Guava's (murmur3, from capacity and fpp): it takes no "
                            "hash, seed or bits_per_key");
            return -1;
        }
        rc = amq_guava_params_for(capacity, fpp, &p);
        if (rc == AMQ_ERANGE) {
            /* the library says "parameter out of range" alone */
            char msg[300]; /* (PyErr_Format has no %g) */
            snprintf(msg, sizeof msg, "guava=True: Guava sizes no filter for capacity %llu at "
                     "fpp=%g (the rate must be in (0, 1), and make 1 to 2^37 bits and at most "
                     "255 probes a key, as Guava's BloomFilter.create checks)",
                     (unsigned long long)capacity, fpp);
            PyErr_SetString(PyExc_ValueError, msg);
            return -1;
        }
        if (rc == AMQ_OK)
            rc = amq_bloom_new(&p, NULL, &b);
        if (rc == AMQ_OK)
            rc = amq_filter_from_bloom(b, &f);
    } else {
        if (redisbloom && (hash_name != NULL || PyDict_GetItemString(kw, "seed") != NULL)) {
            /* as `amq build --redisbloom` refuses --hash and --seed */
            PyErr_SetString(PyExc_ValueError, "redisbloom=True makes a filter in RedisBloom's "
                            "layout, hashed as RedisBloom does: it takes no hash or seed");
            return -1;
        }
        if (check_seed(algo, seed) != 0)
            return -1;
        cfg.hash_algo = algo;
        cfg.seed = seed;
        cfg.capacity = capacity;
        cfg.fpp = fpp;
        cfg.bits_per_key = bpk;
        cfg.fingerprint_bits = fpbits;
        cfg.bucket_size = bucket;
        cfg.max_kicks = kicks;
        cfg.expansion = expansion;
        cfg.nonscaling = (uint32_t)nonscaling;
        cfg.redisbloom = (uint32_t)redisbloom;
        cfg.partitions = partitions;
        cfg.threads = threads;
        cfg.window_ms = window_ms;
        cfg.rate = rate;
        rc = amq_filter_new(&cfg, &f, &err);
    }
    if (rc != AMQ_OK) {
        raise_status(rc, &err, "cannot create the filter");
        return -1;
    }
    if (fpp_given && kind == AMQ_KIND_SCALABLE_CUCKOO) {
        /* its rate is its fingerprints' (a link's): an fpp they do not meet is refused */
        amq_stats st;
        amq_filter_stats(f, &st);
        if (st.fpp_target > fpp) {
            char msg[200]; /* (PyErr_Format has no %g) */
            snprintf(msg, sizeof msg, "a scalable-cuckoo filter of these fingerprints answers "
                     "%.3g of absent keys a link, over fpp=%g: give it more fingerprint_bits "
                     "(4 to 32; RedisBloom's layout has 8)",
                     st.fpp_target, fpp);
            PyErr_SetString(PyExc_ValueError, msg);
            amq_filter_free(f);
            return -1;
        }
    }
    self->f = f;
    return 0;
}

/* Single-key calls: hash and probe under the lock, GIL held (short).
 * op: 0 contains, 1 add, 2 remove; an add past a fixed-size filter's
 * capacity is refused unless allow_overfill. */
static PyObject *single(FilterObject *self, PyObject *key, int op, int allow_overfill)
{
    static const char *const op_names[] = {"query", "add", "remove"};
    int refused;
    keyref k;
    amq_filter *f;
    uint64_t items, cap;
    uint32_t kind;
    int rc, was = 0;

    f = acquire_key(self, key, op != 0, &k);
    if (f == NULL)
        return NULL;
    kind = amq_filter_kind(f);
    if (op == 1) {
        int full = 0;
        if (!allow_overfill && fixed_size(f) && !amq_filter_is_readonly(f)) {
            counts(self, f, &items, &cap);
            full = cap > 0 && items >= cap;
        }
        if (full || stores_copies(f))
            was = amq_filter_contains(f, k.p, (size_t)k.len);
        if (full && (was == 0 || stores_copies(f))) {
            raise_overfill(f, items + 1, cap);
            unlock(self);
            key_put(&k);
            return NULL;
        }
    }
    if (op == 0)
        rc = amq_filter_contains(f, k.p, (size_t)k.len);
    else if (op == 1)
        rc = asks_first(f) ? amq_filter_add_unique(f, k.p, (size_t)k.len)
                           : amq_filter_add(f, k.p, (size_t)k.len);
    else
        rc = amq_filter_remove(f, k.p, (size_t)k.len);
    refused = rc == AMQ_EFULL && op == 1 &&
              raise_refusal(f, amq_filter_hash(f, k.p, (size_t)k.len), "this key");
    unlock(self);
    key_put(&k);
    if (refused)
        return NULL;
    if (rc < 0)
        return raise_op(rc, kind, op_names[op]);
    if (op == 1 && stores_copies(f))
        rc = was == 0; /* stored either way; new only if it answered absent */
    return PyBool_FromLong(rc);
}

/* The allow_overfill keyword of the add methods, parsed by hand for add's
 * METH_FASTCALL. */
static int parse_one_key(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                         int *allow_overfill)
{
    Py_ssize_t i, nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs != 1) {
        PyErr_Format(PyExc_TypeError, "add() takes exactly one key (%zd given)", nargs);
        return -1;
    }
    for (i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(name, "allow_overfill") != 0) {
            PyErr_Format(PyExc_TypeError, "add() got an unexpected keyword argument '%U'",
                         name);
            return -1;
        }
        *allow_overfill = PyObject_IsTrue(args[nargs + i]);
        if (*allow_overfill < 0)
            return -1;
    }
    return 0;
}

static int Filter_contains_op(FilterObject *self, PyObject *key)
{
    PyObject *r = single(self, key, 0, 0);
    int v;
    if (r == NULL)
        return -1;
    v = r == Py_True;
    Py_DECREF(r);
    return v;
}

static PyObject *Filter_add(FilterObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    int allow = 0;
    if (parse_one_key(args, nargs, kwnames, &allow) != 0)
        return NULL;
    return single(self, args[0], 1, allow);
}

static PyObject *Filter_contains(FilterObject *self, PyObject *key)
{
    return single(self, key, 0, 0);
}

static PyObject *Filter_remove(FilterObject *self, PyObject *key)
{
    return single(self, key, 2, 0);
}

/* 0 when f ages by the caller's clock (an aging filter by time), else -1
 * with UnsupportedError: a time asked of another filter is refused, as
 * `amq query --now` refuses it, not ignored.  Call with the lock held. */
static int check_clock(const amq_filter *f, const char *what)
{
    amq_aging_info ai;
    uint32_t kind = amq_filter_kind(f);

    if (amq_aging_get_info(f, &ai) == AMQ_OK && ai.time_mode)
        return 0;
    if (kind == AMQ_KIND_AGING)
        PyErr_Format(UnsupportedError, "%s: this aging filter ages by count and has no clock "
                     "(a time applies to aging filters made with window_ms and rate)", what);
    else
        PyErr_Format(UnsupportedError, "%s: a %s filter has no clock (a time applies to "
                     "aging filters made with window_ms and rate)", what, amq_kind_name(kind));
    return -1;
}

static PyObject *Filter_contains_at(FilterObject *self, PyObject *args)
{
    PyObject *key;
    uint64_t now_ms;
    keyref k;
    int rc;
    if (!PyArg_ParseTuple(args, "OO&", &key, conv_now_ms, &now_ms))
        return NULL;
    if (acquire_key(self, key, 0, &k) == NULL)
        return NULL;
    if (check_clock(self->f, "contains_at") != 0) {
        unlock(self);
        key_put(&k);
        return NULL;
    }
    rc = amq_aging_contains_at(self->f, amq_filter_hash(self->f, k.p, (size_t)k.len), now_ms);
    unlock(self);
    key_put(&k);
    if (rc < 0)
        return raise_status(rc, NULL, NULL);
    return PyBool_FromLong(rc);
}

static PyObject *Filter_advance(FilterObject *self, PyObject *arg)
{
    uint64_t now_ms;
    uint32_t kind;
    int rc;
    if (!conv_now_ms(arg, &now_ms))
        return NULL;
    if (acquire(self, 1) == NULL)
        return NULL;
    kind = amq_filter_kind(self->f);
    rc = amq_aging_advance(self->f, now_ms);
    unlock(self);
    if (rc == AMQ_EKIND || rc == AMQ_EUNSUPPORTED) {
        /* the library's "wrong or unknown filter kind", "operation not supported" */
        if (rc == AMQ_EKIND)
            PyErr_Format(PyExc_ValueError, "advance: %s %s filter has no clock (a time applies "
                         "to aging filters made with window_ms and rate)",
                         article(amq_kind_name(kind)), amq_kind_name(kind));
        else
            PyErr_SetString(UnsupportedError, "advance: this aging filter ages by count and "
                            "has no clock (a time applies to aging filters made with window_ms "
                            "and rate)");
        return NULL;
    }
    if (rc != AMQ_OK)
        return raise_status(rc, NULL, "advance");
    Py_RETURN_NONE;
}

/* numpy.empty(n, dtype=bool) when numpy is there, else a bytearray. */
static PyObject *new_bool_array(size_t n, uint8_t **data)
{
    PyObject *np = PyImport_ImportModule("numpy");
    PyObject *arr;
    Py_buffer v;

    if (np == NULL) {
        PyErr_Clear();
        arr = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)n);
        if (arr == NULL)
            return NULL;
        *data = (uint8_t *)PyByteArray_AS_STRING(arr);
        return arr;
    }
    arr = PyObject_CallMethod(np, "zeros", "ns", (Py_ssize_t)n, "bool");
    Py_DECREF(np);
    if (arr == NULL)
        return NULL;
    if (PyObject_GetBuffer(arr, &v, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) {
        Py_DECREF(arr);
        return NULL;
    }
    *data = v.buf;
    PyBuffer_Release(&v); /* the array owns the memory; it outlives the call */
    return arr;
}

static PyObject *Filter_contains_many(FilterObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"keys", "width", "hashes", "now_ms", NULL};
    PyObject *keys, *result, *now_obj = Py_None;
    uint64_t now_ms = 0;
    Py_ssize_t width = 0;
    int hashes = 0;
    keyset ks;
    uint8_t *out = NULL;
    int rc;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$npO", names, &keys, &width, &hashes,
                                     &now_obj))
        return NULL;
    if (now_obj != Py_None && !conv_now_ms(now_obj, &now_ms))
        return NULL;
    if (keyset_init(keys, width, hashes, &ks) != 0) {
        keyset_release(&ks);
        return NULL;
    }
    result = new_bool_array(ks.n, &out);
    if (result == NULL) {
        keyset_release(&ks);
        return NULL;
    }
    lock(self, 0);
    rc = handle(self) == NULL || check_u64(self->f, &ks) != 0 ||
                 (now_obj != Py_None && check_clock(self->f, "now_ms") != 0)
             ? -1
             : run_batch(self->f, 0, &ks, out, now_obj != Py_None ? &now_ms : NULL);
    unlock(self);
    keyset_release(&ks);
    if (rc != 0)
        Py_CLEAR(result);
    return result;
}

/*
 * Adds a keyset under the exclusive lock; returns the number of keys new
 * to the filter, or -1 with an exception.  A batch that could take a
 * fixed-size filter past its capacity runs on a copy, which replaces the
 * filter only if it stays within capacity (allow_overfill: no check), so
 * that a refused batch changes nothing, as `amq add` leaves its file.
 * Otherwise an error keeps the keys before the failing one.
 */
static long long add_keyset(FilterObject *self, const keyset *ks, int allow_overfill)
{
    amq_filter *f, *g = NULL;
    uint64_t items = 0, cap = 0;
    uint8_t *out;
    long long added = 0;
    size_t i;
    int rc;

    out = PyMem_Calloc(ks->n > 0 ? ks->n : 1, 1);
    if (out == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    lock(self, 1);
    f = handle(self);
    rc = f == NULL || check_u64(f, ks) != 0 ? -1 : 0;
    if (rc == 0 && !allow_overfill && fixed_size(f) && !amq_filter_is_readonly(f)) {
        counts(self, f, &items, &cap);
        if (cap > 0 && ks->n > 0 && (items >= cap || ks->n > cap - items)) {
            if (stores_copies(f)) {
                /* every key takes a slot: the count after is known */
                raise_overfill(f, items + ks->n, cap);
                rc = -1;
            } else if ((rc = amq_filter_clone(f, NULL, &g)) != AMQ_OK) {
                raise_status(rc, NULL, "copy");
                rc = -1;
            }
        }
    }
    if (rc == 0)
        rc = run_batch(g != NULL ? g : f, 1, ks, out, NULL);
    if (rc == 0 && g != NULL) {
        uint64_t after;
        counts(self, g, &after, &cap);
        if (after > cap) {
            raise_overfill(g, after, cap);
            rc = -1;
        } else {
            self->f = g; /* the copy is the filter now; f goes below */
            g = f;
        }
    }
    unlock(self);
    amq_filter_free(g);
    for (i = 0; i < ks->n; i++)
        added += out[i];
    PyMem_Free(out);
    return rc != 0 ? -1 : added;
}

static PyObject *Filter_add_many(FilterObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"keys", "width", "hashes", "allow_overfill", NULL};
    PyObject *keys;
    Py_ssize_t width = 0;
    int hashes = 0, allow = 0;
    keyset ks;
    long long added;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$npp", names, &keys, &width, &hashes,
                                     &allow))
        return NULL;
    if (keyset_init(keys, width, hashes, &ks) != 0) {
        keyset_release(&ks);
        return NULL;
    }
    added = add_keyset(self, &ks, allow);
    keyset_release(&ks);
    return added < 0 ? NULL : PyLong_FromLongLong(added);
}

static int merge_into(FilterObject *dst, FilterObject *src, int intersect);
static PyObject *Filter_to_bytes(FilterObject *self, PyObject *unused);

/* Hands an iterable's keys to fn in list batches of CHUNK, fewer at its
 * end (memory stays O(CHUNK) whatever its length).  Returns 0, fn's first
 * nonzero status, or -1 with an exception. */
static int each_chunk(PyObject *iterable, int (*fn)(void *ctx, const keyset *ks), void *ctx)
{
    PyObject *it = PyObject_GetIter(iterable), *item;
    keyset ks;
    int rc = 0;

    if (it == NULL)
        return -1;
    memset(&ks, 0, sizeof(ks));
    ks.shape = KEYS_LIST;
    do {
        ks.items = PyList_New(0);
        if (ks.items == NULL) {
            rc = -1;
            break;
        }
        while (rc == 0 && PyList_GET_SIZE(ks.items) < CHUNK && (item = PyIter_Next(it)) != NULL) {
            rc = PyList_Append(ks.items, item);
            Py_DECREF(item);
        }
        ks.n = (size_t)PyList_GET_SIZE(ks.items);
        if (PyErr_Occurred())
            rc = -1;
        else if (ks.n > 0)
            rc = fn(ctx, &ks);
        Py_CLEAR(ks.items);
    } while (rc == 0 && ks.n == CHUNK);
    Py_DECREF(it);
    return rc;
}

/* update()'s chunks of an iterable, each checked as add_many's batches are. */
typedef struct {
    FilterObject *self;
    int allow;
} update_ctx;

static int update_chunk(void *ctx, const keyset *ks)
{
    const update_ctx *u = ctx;
    return add_keyset(u->self, ks, u->allow) < 0 ? -1 : 0;
}

/* update(*others): each a Filter (merged) or keys - a list, tuple or
 * array as one add_many batch, any other iterable in chunks. */
static PyObject *Filter_update(FilterObject *self, PyObject *args, PyObject *kw)
{
    Py_ssize_t i;
    update_ctx u = {self, 0};

    if (kw != NULL && PyDict_GET_SIZE(kw) > 0) {
        PyObject *v = PyDict_GetItemString(kw, "allow_overfill");
        if (v == NULL || PyDict_GET_SIZE(kw) != 1) {
            PyErr_SetString(PyExc_TypeError, "update() takes only allow_overfill as a keyword");
            return NULL;
        }
        if ((u.allow = PyObject_IsTrue(v)) < 0)
            return NULL;
    }
    for (i = 0; i < PyTuple_GET_SIZE(args); i++) {
        PyObject *o = PyTuple_GET_ITEM(args, i);
        if (PyObject_TypeCheck(o, &FilterType)) {
            if (merge_into(self, (FilterObject *)o, 0) != 0)
                return NULL;
        } else if (PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o)) {
            PyErr_SetString(PyExc_TypeError,
                            "update() takes iterables of keys or filters, not one key");
            return NULL;
        } else if (PyList_Check(o) || PyTuple_Check(o) ||
                   (PyObject_CheckBuffer(o) && !PyByteArray_Check(o))) {
            keyset ks;
            long long added;
            if (keyset_init(o, 0, 0, &ks) != 0) {
                keyset_release(&ks);
                return NULL;
            }
            added = add_keyset(self, &ks, u.allow);
            keyset_release(&ks);
            if (added < 0)
                return NULL;
        } else if (each_chunk(o, update_chunk, &u) != 0) {
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

static Py_ssize_t Filter_len(FilterObject *self)
{
    amq_stats st;
    if (read_stats(self, &st) != 0)
        return -1;
    return st.items > (uint64_t)PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)st.items;
}

static int field_to_dict(void *ctx, const amq_field *fl)
{
    PyObject *v;
    int rc;
    if (fl->type == AMQ_FIELD_U64)
        v = PyLong_FromUnsignedLongLong(fl->u64);
    else if (fl->type == AMQ_FIELD_F64)
        v = PyFloat_FromDouble(fl->f64);
    else
        v = PyUnicode_FromString(fl->str ? fl->str : "");
    if (v == NULL)
        return -1;
    rc = PyDict_SetItemString(ctx, fl->name, v);
    Py_DECREF(v);
    return rc;
}

#define SET(d, k, v)                                        \
    do {                                                    \
        PyObject *v_ = (v);                                 \
        if (v_ == NULL || PyDict_SetItemString(d, k, v_)) { \
            Py_XDECREF(v_);                                 \
            goto fail;                                      \
        }                                                   \
        Py_DECREF(v_);                                      \
    } while (0)

static PyObject *Filter_info(FilterObject *self, PyObject *unused)
{
    PyObject *d = PyDict_New();
    amq_stats st;
    int rc;
    (void)unused;
    if (d == NULL)
        return NULL;
    if (acquire(self, 0) == NULL) {
        Py_DECREF(d);
        return NULL;
    }
    amq_filter_stats(self->f, &st);
    SET(d, "kind", PyUnicode_FromString(amq_kind_name(st.kind)));
    SET(d, "hash", PyUnicode_FromString(amq_hash_algo_name(st.hash_algo)));
    SET(d, "seed", PyLong_FromUnsignedLongLong(st.seed));
    SET(d, "items", PyLong_FromUnsignedLongLong(st.items));
    SET(d, "capacity", PyLong_FromUnsignedLongLong(st.capacity));
    SET(d, "bytes", PyLong_FromUnsignedLongLong(st.bytes));
    SET(d, "bits", PyLong_FromUnsignedLongLong(st.bits));
    SET(d, "hashes", PyLong_FromUnsignedLong(st.hashes));
    SET(d, "fpp_target", PyFloat_FromDouble(st.fpp_target));
    SET(d, "fpp_now", PyFloat_FromDouble(st.fpp_now));
    SET(d, "fill", PyFloat_FromDouble(st.fill));
    SET(d, "bits_per_item", PyFloat_FromDouble(st.bits_per_item));
    SET(d, "readonly", PyBool_FromLong(amq_filter_is_readonly(self->f)));
    rc = amq_filter_describe(self->f, field_to_dict, d);
    unlock(self);
    if (rc != 0) {
        if (!PyErr_Occurred())
            raise_status(rc, NULL, "describe");
        Py_DECREF(d);
        return NULL;
    }
    return d;
fail:
    unlock(self);
    Py_DECREF(d);
    return NULL;
}

/* Writes all of data (bytes) through file.write.  A raw stream (FileIO,
 * SocketIO) may take part of it and return the count: the rest is written
 * by further calls.  A write that returns None or no int took it all (the
 * duck-typed writers that return nothing); one that returns 0 is an error. */
static int write_all_to(PyObject *file, PyObject *data)
{
    Py_ssize_t len = PyBytes_GET_SIZE(data), off = 0, n;
    PyObject *view = PyMemoryView_FromObject(data), *part, *r;

    if (view == NULL)
        return -1;
    while (off < len) {
        /* The bytes themselves first: a text file's TypeError then names bytes. */
        if (off == 0) {
            part = data;
            Py_INCREF(part);
        } else if ((part = PySequence_GetSlice(view, off, len)) == NULL) {
            goto fail;
        }
        r = PyObject_CallMethod(file, "write", "O", part);
        Py_DECREF(part);
        if (r == NULL)
            goto fail;
        if (!PyLong_Check(r)) {
            Py_DECREF(r);
            break;
        }
        n = PyLong_AsSsize_t(r);
        Py_DECREF(r);
        if (n == -1 && PyErr_Occurred())
            goto fail;
        if (n <= 0) {
            PyErr_Format(PyExc_OSError, "save: the file object's write() wrote %zd bytes "
                         "after %zd of the filter's %zd: the file is incomplete", n, off, len);
            goto fail;
        }
        off += n < len - off ? n : len - off;
    }
    Py_DECREF(view);
    return 0;
fail:
    Py_DECREF(view);
    return -1;
}

static PyObject *Filter_save(FilterObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"file", "overwrite", NULL};
    PyObject *target, *path;
    int overwrite = 1, rc;
    amq_errinfo err;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$p", names, &target, &overwrite))
        return NULL;
    if (!PyUnicode_Check(target) && !PyBytes_Check(target) &&
        PyObject_HasAttrString(target, "write") && !PyObject_HasAttrString(target, "__fspath__")) {
        /* A binary file object: the file's bytes, written by the caller's object. */
        PyObject *data = Filter_to_bytes(self, NULL);
        int bad;
        if (data == NULL)
            return NULL;
        bad = write_all_to(target, data);
        Py_DECREF(data);
        if (bad)
            return NULL;
        Py_RETURN_NONE;
    }
    if (!PyUnicode_FSConverter(target, &path))
        return NULL;
    memset(&err, 0, sizeof(err));
    if (acquire(self, 0) == NULL) {
        Py_DECREF(path);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = amq_filter_save(self->f, PyBytes_AS_STRING(path), overwrite ? 0 : AMQ_SAVE_EXCL,
                         &err);
    Py_END_ALLOW_THREADS
    unlock(self);
    if (rc != AMQ_OK) {
        PyObject *r = raise_status(rc, &err, PyBytes_AS_STRING(path));
        Py_DECREF(path);
        return r;
    }
    Py_DECREF(path);
    Py_RETURN_NONE;
}

static PyObject *Filter_to_bytes(FilterObject *self, PyObject *unused)
{
    uint64_t size;
    PyObject *out = NULL;
    size_t written = 0;
    int rc;
    (void)unused;

    lock(self, 0);
    if (handle(self) == NULL)
        goto done;
    rc = amq_filter_serialized_size(self->f, &size);
    if (rc != AMQ_OK) {
        raise_status(rc, NULL, "serialize");
        goto done;
    }
    if (size > (uint64_t)PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_OverflowError, "filter too large for bytes");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (out == NULL)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    rc = amq_filter_serialize(self->f, PyBytes_AS_STRING(out), (size_t)size, &written);
    Py_END_ALLOW_THREADS
    if (rc != AMQ_OK || written != size) {
        Py_CLEAR(out);
        raise_status(rc != AMQ_OK ? rc : AMQ_EIO, NULL, "serialize");
    }
done:
    unlock(self);
    return out;
}

static PyObject *from_bytes_impl(PyTypeObject *type, PyObject *data, int trust)
{
    Py_buffer v;
    amq_filter *f = NULL;
    amq_errinfo err;
    int rc;

    if (PyObject_GetBuffer(data, &v, PyBUF_CONTIG_RO) != 0)
        return NULL;
    memset(&err, 0, sizeof(err));
    Py_BEGIN_ALLOW_THREADS
    rc = amq_filter_deserialize(v.buf, (size_t)v.len, trust ? AMQ_OPEN_TRUST : 0, NULL, &f,
                                &err);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&v);
    if (rc != AMQ_OK)
        return raise_status(rc, &err, "cannot read the filter");
    return (PyObject *)wrap_as(type, f);
}

static PyObject *Filter_from_bytes(PyObject *cls, PyObject *args, PyObject *kw)
{
    static char *names[] = {"data", "trust", NULL};
    PyObject *data;
    int trust = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$p", names, &data, &trust))
        return NULL;
    return from_bytes_impl((PyTypeObject *)cls, data, trust);
}

/* A subclass's own attributes, as object.__getstate__ gives them (Python 3.11:
 * None, __dict__, or (__dict__, slots)); before 3.11, __dict__ or None. */
static PyObject *instance_state(PyObject *self)
{
    PyObject *st = PyObject_CallMethod(self, "__getstate__", NULL);
    if (st != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return st;
    PyErr_Clear();
    st = PyObject_GetAttrString(self, "__dict__");
    if (st != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return st;
    PyErr_Clear();
    Py_RETURN_NONE;
}

/* (type.from_bytes, (the file's bytes,)[, state]): pickle, copy.copy and
 * copy.deepcopy keep a subclass's attributes too (pickle and copy set the
 * state as they do for any object). */
static PyObject *Filter_reduce(FilterObject *self, PyObject *unused)
{
    PyObject *bytes = Filter_to_bytes(self, unused), *fn, *state;
    if (bytes == NULL)
        return NULL;
    fn = PyObject_GetAttrString((PyObject *)Py_TYPE(self), "from_bytes");
    state = fn != NULL ? instance_state((PyObject *)self) : NULL;
    if (state == NULL) {
        Py_XDECREF(fn);
        Py_DECREF(bytes);
        return NULL;
    }
    if (state == Py_None) {
        Py_DECREF(state);
        return Py_BuildValue("(N(N))", fn, bytes);
    }
    return Py_BuildValue("(N(N)N)", fn, bytes, state);
}

/* dst takes src's own attributes, state set as the copy module sets it
 * (__setstate__, else __dict__ updated and slots set): a subclass's copy(),
 * f | g and f & g keep its attributes, as copy.copy(f) does.  0, or -1 with
 * an exception. */
static int copy_state(PyObject *src, PyObject *dst)
{
    PyObject *st, *dict, *slots = NULL, *d, *k, *v, *r;
    Py_ssize_t pos = 0;
    int rc = 0;
    if (Py_TYPE(src) == &FilterType)
        return 0; /* no attributes of its own */
    st = instance_state(src);
    if (st == NULL)
        return -1;
    if (st == Py_None) {
        Py_DECREF(st);
        return 0;
    }
    if (PyObject_HasAttrString(dst, "__setstate__")) {
        r = PyObject_CallMethod(dst, "__setstate__", "O", st);
        Py_XDECREF(r);
        Py_DECREF(st);
        return r != NULL ? 0 : -1;
    }
    dict = st;
    if (PyTuple_Check(st) && PyTuple_GET_SIZE(st) == 2) {
        dict = PyTuple_GET_ITEM(st, 0);
        slots = PyTuple_GET_ITEM(st, 1);
    }
    if (PyDict_Check(dict) && PyDict_GET_SIZE(dict) > 0) {
        d = PyObject_GetAttrString(dst, "__dict__");
        rc = d != NULL ? PyDict_Update(d, dict) : -1;
        Py_XDECREF(d);
    }
    if (rc == 0 && slots != NULL && PyDict_Check(slots))
        while (rc == 0 && PyDict_Next(slots, &pos, &k, &v))
            rc = PyObject_SetAttr(dst, k, v);
    Py_DECREF(st);
    return rc;
}

/* A writable copy of type(self), its attributes too (copy_state). */
static PyObject *Filter_copy(FilterObject *self, PyObject *unused)
{
    amq_filter *c = NULL;
    PyObject *o;
    int rc;
    (void)unused;
    if (acquire(self, 0) == NULL)
        return NULL;
    rc = amq_filter_clone(self->f, NULL, &c);
    unlock(self);
    if (rc != AMQ_OK)
        return raise_status(rc, NULL, "copy");
    o = (PyObject *)wrap_as(Py_TYPE(self), c);
    if (o != NULL && copy_state((PyObject *)self, o) != 0)
        Py_CLEAR(o);
    return o;
}

/* dst gains src's keys.  Locks dst exclusive, src shared (src != dst).  A
 * fixed-size filter merged past its capacity warns (RuntimeWarning), as `amq
 * merge` does: the capacity rule of adds, not silently broken. */
static int merge_into(FilterObject *dst, FilterObject *src, int intersect)
{
    amq_errinfo err;
    uint64_t items, cap;
    char over[256] = ""; /* the warning of a merge past a fixed size's capacity */
    int rc;
    memset(&err, 0, sizeof(err));
    if (dst == src) {
        lock(dst, 0);
        rc = handle(dst) == NULL ? -100 : AMQ_OK;
        unlock(dst);
        return rc == AMQ_OK ? 0 : -1; /* f | f == f */
    }
    /* In address order, so that a.merge(b) and b.merge(a) in two threads
     * cannot each hold one lock and wait for the other. */
    if (dst < src) {
        lock(dst, 1);
        lock(src, 0);
    } else {
        lock(src, 0);
        lock(dst, 1);
    }
    if (handle(dst) == NULL || handle(src) == NULL) {
        unlock(src);
        unlock(dst);
        return -1;
    }
    rc = intersect ? amq_filter_intersect(dst->f, src->f, &err)
                   : amq_filter_merge(dst->f, src->f, &err);
    if (rc == AMQ_OK && !intersect && fixed_size(dst->f)) {
        counts(dst, dst->f, &items, &cap);
        if (cap > 0 && items > cap) {
            amq_stats st;
            amq_filter_stats(dst->f, &st);
            snprintf(over, sizeof over, "merge: the filter holds %llu items, over its capacity "
                     "of %llu: false-positive rate %.3g (created for %.3g)",
                     (unsigned long long)items, (unsigned long long)cap, st.fpp_now,
                     st.fpp_target);
        }
    }
    unlock(src);
    unlock(dst);
    if (rc != AMQ_OK) {
        raise_status(rc, &err, intersect ? "intersect" : "merge");
        return -1;
    }
    /* merged all the same, as `amq merge` writes its file and warns */
    if (over[0] != '\0' && PyErr_WarnEx(PyExc_RuntimeWarning, over, 1) != 0)
        return -1;
    return 0;
}

/* The other filter of a method taking one, or NULL with TypeError naming
 * the method. */
static FilterObject *filter_arg(PyObject *other, const char *method)
{
    if (PyObject_TypeCheck(other, &FilterType))
        return (FilterObject *)other;
    PyErr_Format(PyExc_TypeError, "%s() takes an amq.Filter", method);
    return NULL;
}

static PyObject *Filter_merge(FilterObject *self, PyObject *other)
{
    FilterObject *o = filter_arg(other, "merge");
    if (o == NULL || merge_into(self, o, 0) != 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Filter_intersect(FilterObject *self, PyObject *other)
{
    FilterObject *o = filter_arg(other, "intersect");
    if (o == NULL || merge_into(self, o, 1) != 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *binary_op(PyObject *a, PyObject *b, int intersect, int inplace)
{
    FilterObject *dst;
    if (!PyObject_TypeCheck(a, &FilterType) || !PyObject_TypeCheck(b, &FilterType))
        Py_RETURN_NOTIMPLEMENTED;
    if (inplace) {
        dst = (FilterObject *)a;
        Py_INCREF(dst);
    } else {
        dst = (FilterObject *)Filter_copy((FilterObject *)a, NULL);
        if (dst == NULL)
            return NULL;
    }
    if (merge_into(dst, (FilterObject *)b, intersect) != 0) {
        Py_DECREF(dst);
        return NULL;
    }
    return (PyObject *)dst;
}

static PyObject *Filter_or(PyObject *a, PyObject *b) { return binary_op(a, b, 0, 0); }
static PyObject *Filter_ior(PyObject *a, PyObject *b) { return binary_op(a, b, 0, 1); }
static PyObject *Filter_and(PyObject *a, PyObject *b) { return binary_op(a, b, 1, 0); }
static PyObject *Filter_iand(PyObject *a, PyObject *b) { return binary_op(a, b, 1, 1); }

/* ---- set-like comparisons and combinations -------------------------------------- */

/* Locks a and b for reading, in address order (as merge_into does); 0, or -1
 * with ValueError for a closed filter (no lock held then). */
static int lock_pair(FilterObject *a, FilterObject *b)
{
    FilterObject *lo = a < b ? a : b, *hi = a < b ? b : a;
    lock(lo, 0);
    if (hi != lo)
        lock(hi, 0);
    if (handle(a) != NULL && handle(b) != NULL)
        return 0;
    if (hi != lo)
        unlock(hi);
    unlock(lo);
    return -1;
}

static void unlock_pair(FilterObject *a, FilterObject *b)
{
    if (a != b)
        unlock(b);
    unlock(a);
}

/* 1 when a's bits are a subset of b's (a <= b), 0 when not, -1 with an
 * exception (other kinds, other geometries): the library's test. */
static int is_subset(FilterObject *a, FilterObject *b)
{
    amq_errinfo err;
    int r;

    memset(&err, 0, sizeof err);
    if (lock_pair(a, b) != 0)
        return -1;
    r = amq_filter_is_subset(a->f, b->f, &err);
    unlock_pair(a, b);
    if (r < 0) {
        raise_status(r, &err, NULL);
        return -1;
    }
    return r;
}

/* 1 when a and b hold the same (amq_filter_equal; a filter is itself,
 * unless closed), 0, or -1 with an exception. */
static int content_equal(FilterObject *a, FilterObject *b)
{
    int r;

    if (lock_pair(a, b) != 0)
        return -1;
    r = a == b ? 1 : amq_filter_equal(a->f, b->f);
    unlock_pair(a, b);
    if (r < 0) {
        raise_status(r, NULL, NULL);
        return -1;
    }
    return r;
}

static PyObject *Filter_richcompare(PyObject *a, PyObject *b, int op)
{
    FilterObject *x = (FilterObject *)a, *y = (FilterObject *)b;
    int r;
    if (!PyObject_TypeCheck(a, &FilterType) || !PyObject_TypeCheck(b, &FilterType))
        Py_RETURN_NOTIMPLEMENTED;
    switch (op) {
    case Py_EQ:
    case Py_NE:
        r = content_equal(x, y);
        if (r >= 0 && op == Py_NE)
            r = !r;
        break;
    case Py_LE:
        r = is_subset(x, y);
        break;
    case Py_GE:
        r = is_subset(y, x);
        break;
    case Py_LT:
    case Py_GT:
        r = op == Py_LT ? is_subset(x, y) : is_subset(y, x);
        if (r == 1) {
            r = content_equal(x, y);
            r = r < 0 ? -1 : !r;
        }
        break;
    default:
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (r < 0)
        return NULL;
    return PyBool_FromLong(r);
}

static PyObject *Filter_issubset(FilterObject *self, PyObject *other)
{
    FilterObject *o = filter_arg(other, "issubset");
    int r = o != NULL ? is_subset(self, o) : -1;
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *Filter_issuperset(FilterObject *self, PyObject *other)
{
    FilterObject *o = filter_arg(other, "issuperset");
    int r = o != NULL ? is_subset(o, self) : -1;
    return r < 0 ? NULL : PyBool_FromLong(r);
}

/* union(*others) / intersection(*others): a new filter. */
static PyObject *combine(FilterObject *self, PyObject *others, int intersect)
{
    FilterObject *dst;
    Py_ssize_t i;
    for (i = 0; i < PyTuple_GET_SIZE(others); i++)
        if (!PyObject_TypeCheck(PyTuple_GET_ITEM(others, i), &FilterType)) {
            PyErr_Format(PyExc_TypeError, "%s() takes amq.Filter objects",
                         intersect ? "intersection" : "union");
            return NULL;
        }
    dst = (FilterObject *)Filter_copy(self, NULL);
    if (dst == NULL)
        return NULL;
    for (i = 0; i < PyTuple_GET_SIZE(others); i++)
        if (merge_into(dst, (FilterObject *)PyTuple_GET_ITEM(others, i), intersect) != 0) {
            Py_DECREF(dst);
            return NULL;
        }
    return (PyObject *)dst;
}

static PyObject *Filter_union(FilterObject *self, PyObject *others)
{
    return combine(self, others, 0);
}

static PyObject *Filter_intersection(FilterObject *self, PyObject *others)
{
    return combine(self, others, 1);
}

/* Items estimated from the bits (Bloom kinds: -m/k ln(1 - fill), the
 * Swamidass-Baldi estimate), whatever the count says; other kinds count
 * exactly. */
static PyObject *get_approx_items(FilterObject *self, void *c)
{
    amq_stats st;
    (void)c;
    if (read_stats(self, &st) != 0)
        return NULL;
    if (amq_kind_is_bit_array(st.kind) && st.bits > 0 && st.hashes > 0) {
        double est;
        est = st.fill >= 1.0 ? Py_HUGE_VAL
                             : -((double)st.bits / (double)st.hashes) * log1p(-st.fill);
        return PyFloat_FromDouble(est);
    }
    return PyFloat_FromDouble((double)st.items);
}

static PyObject *Filter_bytes(FilterObject *self, PyObject *unused)
{
    return Filter_to_bytes(self, unused);
}

/* A call that changes the filter and returns only a status, under the writer's lock. */
static PyObject *call_writer(FilterObject *self, int (*fn)(amq_filter *), const char *what)
{
    uint32_t kind;
    int rc;
    if (acquire(self, 1) == NULL)
        return NULL;
    kind = amq_filter_kind(self->f);
    rc = fn(self->f);
    unlock(self);
    if (rc != AMQ_OK)
        return raise_op(rc, kind, what);
    Py_RETURN_NONE;
}

static PyObject *Filter_clear(FilterObject *self, PyObject *unused)
{
    (void)unused;
    return call_writer(self, amq_filter_clear, "clear");
}

static PyObject *Filter_settle(FilterObject *self, PyObject *unused)
{
    (void)unused;
    return call_writer(self, amq_filter_settle, "settle");
}

static PyObject *Filter_close(FilterObject *self, PyObject *unused)
{
    (void)unused;
    lock(self, 1);
    amq_filter_free(self->f);
    self->f = NULL;
    unlock(self);
    Py_RETURN_NONE;
}

static PyObject *Filter_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyObject *Filter_exit(FilterObject *self, PyObject *args)
{
    (void)args;
    return Filter_close(self, NULL);
}

static PyObject *Filter_hash_key(FilterObject *self, PyObject *key)
{
    keyref k;
    amq_hash128 h;
    if (acquire_key(self, key, 0, &k) == NULL)
        return NULL;
    h = amq_filter_hash(self->f, k.p, (size_t)k.len);
    unlock(self);
    key_put(&k);
    return Py_BuildValue("(KK)", (unsigned long long)h.h1, (unsigned long long)h.h2);
}

static PyObject *Filter_export_guava(FilterObject *self, PyObject *unused)
{
    amq_bloom *b;
    size_t size = 0;
    PyObject *out = NULL;
    amq_errinfo err;
    int rc;
    (void)unused;

    memset(&err, 0, sizeof(err));
    lock(self, 0);
    if (handle(self) == NULL)
        goto done;
    b = amq_filter_bloom(self->f);
    if (b == NULL) {
        PyErr_Format(UnsupportedError, "a %s filter has no Guava form (create one with "
                     "Filter(kind='bloom', guava=True))",
                     amq_kind_name(amq_filter_kind(self->f)));
        goto done;
    }
    rc = amq_guava_serialized_size(b, &size, &err);
    if (rc != AMQ_OK) {
        raise_status(rc, &err, "export_guava");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (out == NULL)
        goto done;
    rc = amq_guava_serialize(b, PyBytes_AS_STRING(out), size, NULL, &err);
    if (rc != AMQ_OK) {
        Py_CLEAR(out);
        raise_status(rc, &err, "export_guava");
    }
done:
    unlock(self);
    return out;
}

static PyObject *get_kind(FilterObject *self, void *c)
{
    PyObject *r;
    (void)c;
    lock(self, 0);
    r = handle(self) ? PyUnicode_FromString(amq_kind_name(amq_filter_kind(self->f))) : NULL;
    unlock(self);
    return r;
}

static PyObject *get_readonly(FilterObject *self, void *c)
{
    PyObject *r;
    (void)c;
    lock(self, 0);
    r = handle(self) ? PyBool_FromLong(amq_filter_is_readonly(self->f)) : NULL;
    unlock(self);
    return r;
}

static PyObject *get_closed(FilterObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->f == NULL);
}

static PyObject *stat_field(FilterObject *self, int which)
{
    amq_stats st;
    if (read_stats(self, &st) != 0)
        return NULL;
    switch (which) {
    case 0:
        return PyLong_FromUnsignedLongLong(st.capacity);
    case 1:
        return PyFloat_FromDouble(st.fpp_target);
    default:
        return PyLong_FromUnsignedLongLong(st.bytes);
    }
}

static PyObject *get_capacity(FilterObject *self, void *c) { (void)c; return stat_field(self, 0); }
static PyObject *get_fpp(FilterObject *self, void *c) { (void)c; return stat_field(self, 1); }
static PyObject *get_nbytes(FilterObject *self, void *c) { (void)c; return stat_field(self, 2); }

static PyObject *Filter_repr(FilterObject *self)
{
    amq_stats st;
    PyObject *r;
    lock(self, 0);
    if (self->f == NULL) {
        unlock(self);
        return PyUnicode_FromString("<amq.Filter closed>");
    }
    amq_filter_stats(self->f, &st);
    r = PyUnicode_FromFormat("<amq.Filter kind=%s items=%llu capacity=%llu bytes=%llu%s>",
                             amq_kind_name(st.kind), (unsigned long long)st.items,
                             (unsigned long long)st.capacity, (unsigned long long)st.bytes,
                             amq_filter_is_readonly(self->f) ? " readonly" : "");
    unlock(self);
    return r;
}

#define METH_KW (METH_VARARGS | METH_KEYWORDS)
#define FN(f) (PyCFunction)(void (*)(void))(f)

static PyMethodDef Filter_methods[] = {
    {"add", FN(Filter_add), METH_FASTCALL | METH_KEYWORDS,
     "add($self, key, /, *, allow_overfill=False)\n--\n\n"
     "Adds a key (str as UTF-8, bytes or any buffer as is). Returns True if it\n"
     "was new (the filter answered absent before), False if the filter may\n"
     "already have held it. Cuckoo kinds store a copy either way (as CF.ADD),\n"
     "so that remove() of another key never makes this one absent.\n"
     "A fixed-size filter at its capacity refuses a new key with\n"
     "FilterFullError (nothing changed; `amq add` refuses the same) unless\n"
     "allow_overfill=True. ReadOnlyError for a memory-mapped filter."},
    {"contains", (PyCFunction)Filter_contains, METH_O,
     "contains($self, key, /)\n--\n\n"
     "False: certainly never added. True: maybe added (false positives at the\n"
     "filter's rate). Same as `key in f`."},
    {"remove", (PyCFunction)Filter_remove, METH_O,
     "remove($self, key, /)\n--\n\n"
     "Cuckoo kinds: removes one copy of a key that was added; True if found.\n"
     "Removing a key never added may remove another key's fingerprint.\n"
     "Other kinds raise UnsupportedError."},
    {"add_many", FN(Filter_add_many), METH_KW,
     "add_many($self, /, keys, *, width=0, hashes=False, allow_overfill=False)\n--\n\n"
     "Adds a batch; returns how many keys were new. keys: a list or sequence\n"
     "of str/bytes/buffers; a numpy array of dtype 'S<N>' (trailing NULs\n"
     "dropped, as numpy does), 'U<N>', object (str/bytes elements, e.g.\n"
     "pandas' .values) or void 'V<N>'; an integer array (each element's bytes\n"
     "as stored, on every kind: arr.view('V<itemsize>')); a 2-D uint8 array\n"
     "(one key per row); any buffer with width=N (fixed-width keys back to\n"
     "back). hashes=True: a uint64 array of 64-bit hashes, not keys (blocked\n"
     "kind only). A batch that would take a fixed-size filter past its\n"
     "capacity raises FilterFullError and changes nothing (it runs on a copy\n"
     "when it could cross), unless allow_overfill=True. Array batches run\n"
     "without the GIL; list batches are hashed with it and probed without it\n"
     "in slices of 2**20 keys (lists under 2**18 keys keep it)."},
    {"contains_many", FN(Filter_contains_many), METH_KW,
     "contains_many($self, /, keys, *, width=0, hashes=False, now_ms=None)\n--\n\n"
     "Answers a batch (keys as in add_many) as numpy.ndarray[bool]; a\n"
     "bytearray of 0/1 when numpy is not installed. now_ms: aging filters by\n"
     "time answer as of that time (as contains_at); other filters have no clock\n"
     "and raise UnsupportedError (None: no time)."},
    {"advance", (PyCFunction)Filter_advance, METH_O,
     "advance($self, now_ms, /)\n--\n\n"
     "Aging filters by time: moves the filter's clock to now_ms (milliseconds\n"
     "on any fixed epoch; the library never reads a clock), starting the\n"
     "generations begun since. Adds then count at that time. A time before the\n"
     "current generation changes nothing. UnsupportedError for count-mode aging\n"
     "filters, ValueError for other kinds (no clock)."},
    {"contains_at", (PyCFunction)Filter_contains_at, METH_VARARGS,
     "contains_at($self, key, now_ms, /)\n--\n\n"
     "Aging filters by time: the answer as of now_ms, without changing the\n"
     "filter (also on a read-only file). Other filters (count-mode aging, other\n"
     "kinds) have no clock: UnsupportedError, as `amq query --now` refuses."},
    {"update", FN(Filter_update), METH_KW,
     "update($self, /, *others, allow_overfill=False)\n--\n\n"
     "Adds every key of each argument: a Filter is merged (as |=), a list,\n"
     "tuple or array is one add_many batch, any other iterable is read in\n"
     "chunks of 1,024 keys (each added as a batch: a refused chunk changes\n"
     "nothing, the chunks before it stay added)."},
    {"merge", (PyCFunction)Filter_merge, METH_O,
     "merge($self, other, /)\n--\n\n"
     "Adds every key of another filter of the same kind and geometry (f |= g).\n"
     "IncompatibleError says what differs."},
    {"intersect", (PyCFunction)Filter_intersect, METH_O,
     "intersect($self, other, /)\n--\n\n"
     "Keeps what both filters may hold (bloom, blocked, partitioned; f &= g)."},
    {"union", (PyCFunction)Filter_union, METH_VARARGS,
     "union($self, /, *others)\n--\n\n"
     "A new filter holding the keys of this one and of every other (f | g | ...):\n"
     "a copy() of this one (its type and attributes) that merged the others."},
    {"intersection", (PyCFunction)Filter_intersection, METH_VARARGS,
     "intersection($self, /, *others)\n--\n\n"
     "A new filter holding what this one and every other may hold (f & g & ...):\n"
     "a copy() of this one (its type and attributes) intersected with the others."},
    {"issubset", (PyCFunction)Filter_issubset, METH_O,
     "issubset($self, other, /)\n--\n\n"
     "True when every bit set here is set in other (f <= g): every key added\n"
     "here answers present there. Bloom kinds of one geometry."},
    {"issuperset", (PyCFunction)Filter_issuperset, METH_O,
     "issuperset($self, other, /)\n--\n\n"
     "other.issubset(self) (f >= g)."},
    {"info", (PyCFunction)Filter_info, METH_NOARGS,
     "info($self, /)\n--\n\n"
     "Kind, hash, sizes, items, fill, expected false-positive rate and the\n"
     "kind's own fields (as `amq info`)."},
    {"save", FN(Filter_save), METH_KW,
     "save($self, /, file, *, overwrite=True)\n--\n\n"
     "Writes the amq file. file: a path, written atomically with the tool's\n"
     "rules (temporary file, fsync, rename, directory fsync; a symlink is\n"
     "followed, the replaced file's mode and owner kept; an existing file is\n"
     "replaced only if it is an amq filter - FileExistsError otherwise - and\n"
     "not if it has other hard links; overwrite=False refuses any existing\n"
     "file), or a binary file object, given the file's bytes through write()\n"
     "(a raw stream's partial write is continued; a write of 0 bytes raises\n"
     "OSError)."},
    {"to_bytes", (PyCFunction)Filter_to_bytes, METH_NOARGS,
     "to_bytes($self, /)\n--\n\nThe file's bytes (what save writes); bytes(f) too."},
    {"__bytes__", (PyCFunction)Filter_bytes, METH_NOARGS,
     "__bytes__($self, /)\n--\n\nThe file's bytes (to_bytes())."},
    {"from_bytes", FN(Filter_from_bytes), METH_KW | METH_CLASS,
     "from_bytes($type, /, data, *, trust=False)\n--\n\n"
     "Reads a filter from the bytes of a file; every byte is validated\n"
     "(CorruptFileError otherwise)."},
    {"copy", (PyCFunction)Filter_copy, METH_NOARGS,
     "copy($self, /)\n--\n\nA writable deep copy (also of a memory-mapped filter), of this\n"
     "filter's type: a subclass's copy keeps its attributes, as copy.copy(f)\n"
     "does (they are shared, not copied themselves)."},
    {"clear", (PyCFunction)Filter_clear, METH_NOARGS, "clear($self, /)\n--\n\nEmpties the filter."},
    {"settle", (PyCFunction)Filter_settle, METH_NOARGS,
     "settle($self, /)\n--\n\nFinishes a growing kind's growth under way (quotient: its new table;\n"
     "expandable: its doubling; pocket: its last 16 adds, waiting in a ring, placed), so\n"
     "that the filter holds one table and a save writes one; nothing to do for other kinds."},
    {"close", (PyCFunction)Filter_close, METH_NOARGS,
     "close($self, /)\n--\n\nReleases the filter (and its mapping); later calls raise ValueError."},
    {"hash_key", (PyCFunction)Filter_hash_key, METH_O,
     "hash_key($self, key, /)\n--\n\nThe 128-bit hash pair the filter derives its probes from."},
    {"export_guava", (PyCFunction)Filter_export_guava, METH_NOARGS,
     "export_guava($self, /)\n--\n\n"
     "Guava's BloomFilter.writeTo bytes of a filter made with guava=True\n"
     "(or imported from Guava)."},
    {"__reduce__", (PyCFunction)Filter_reduce, METH_NOARGS,
     "__reduce__($self, /)\n--\n\npickle support"},
    {"__enter__", (PyCFunction)Filter_enter, METH_NOARGS, "__enter__($self, /)\n--\n\n"},
    {"__exit__", (PyCFunction)Filter_exit, METH_VARARGS, "__exit__($self, /, *exc)\n--\n\n"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Filter_getset[] = {
    {"kind", (getter)get_kind, NULL, "the kind's name: 'bloom', 'blocked', 'cuckoo', ...", NULL},
    {"readonly", (getter)get_readonly, NULL, "True for a memory-mapped filter", NULL},
    {"closed", (getter)get_closed, NULL, "True after close()", NULL},
    {"capacity", (getter)get_capacity, NULL,
     "items the filter is sized for (a kind that grows: where its next growth starts)", NULL},
    {"fpp", (getter)get_fpp, NULL,
     "target false-positive rate: at capacity for a sized kind, at every size for the "
     "expandable, quotient and pocket kinds, the first link's for scalable-bloom, a full link's "
     "for scalable-cuckoo", NULL},
    {"nbytes", (getter)get_nbytes, NULL, "bytes of filter data", NULL},
    {"approx_items", (getter)get_approx_items, NULL,
     "distinct keys estimated from the bits (Bloom kinds: -m/k ln(1 - fill)); the "
     "count for other kinds", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods Filter_as_sequence = {
    .sq_length = (lenfunc)Filter_len,
    .sq_contains = (objobjproc)Filter_contains_op,
};

static PyNumberMethods Filter_as_number = {
    .nb_or = Filter_or,
    .nb_inplace_or = Filter_ior,
    .nb_and = Filter_and,
    .nb_inplace_and = Filter_iand,
};

PyDoc_STRVAR(Filter_doc,
"Filter(capacity=1000000, fpp=0.01, *, kind='bloom', bits_per_key=0.0, hash=None, seed=0, fingerprint_bits=0, bucket_size=0, max_kicks=0, expansion=0, nonscaling=False, redisbloom=False, partitions=0, threads=0, guava=False, window_ms=0, rate=0.0)\n"
"--\n"
"\n"
"An approximate-membership filter for `capacity` keys at false-positive\n"
"rate `fpp` (the order of rbloom's Bloom and pyprobables' BloomFilter):\n"
"`key in f` is False for every key never added and True for every key\n"
"added (plus false positives at about fpp).\n"
"\n"
"kind: 'bloom' (classic), 'blocked' (cache-local, fastest), 'partitioned',\n"
"'cuckoo' (deletable), 'scalable-bloom', 'scalable-cuckoo' (grow past\n"
"capacity), 'expandable' (never sized: starts with room for capacity keys,\n"
"default 4096, and doubles as keys come, at or under fpp; deletable),\n"
"'quotient' (never sized either: starts at capacity keys, default 4096,\n"
"and grows by 10 % as keys come, at or under fpp, in about 20 bits a key\n"
"at 1 %; no removal), 'pocket' (never sized either: starts at capacity\n"
"keys, default 4096, at least 64, in 64-byte bins grown by 15 %\n"
"in up to 256 segments, about 22 bits a key, its rate far under fpp (about\n"
"2e-4 at 1e6 keys); fingerprint_bits 5 to 15 shortens its entries; no\n"
"removal),\n"
"'aging' (a sliding window: capacity = the last N adds, or\n"
"window_ms + rate to age by the caller's clock, see advance()). The static\n"
"kinds ('fuse', 'ribbon') are made by amq.build(). hash: None takes the\n"
"kind's default ('mulmix' for 'cuckoo', 'xxh3' for the others). A\n"
"keyword that only other kinds read (window_ms for 'bloom', ...) is a\n"
"ValueError. threads is reserved: 0 or 1 (nothing is built on threads;\n"
"another count is a ValueError). The same files as the amq tool: a filter saved here answers\n"
"`amq query` identically, and `amq.open` reads what `amq build` writes.\n"
"\n"
"len(f) is the number of keys added as new (an estimate for Bloom kinds:\n"
"a key that was a false positive is not counted); f.approx_items the\n"
"estimate from the bits. f == g compares contents; f <= g is issubset.\n"
"\n"
"Threads: any number of threads may query one filter at the same time;\n"
"adds, removes and merges take the filter for themselves and wait for\n"
"running queries.");

static PyTypeObject FilterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "amq.Filter",
    .tp_basicsize = sizeof(FilterObject),
    .tp_dealloc = (destructor)Filter_dealloc,
    .tp_repr = (reprfunc)Filter_repr,
    .tp_as_number = &Filter_as_number,
    .tp_as_sequence = &Filter_as_sequence,
    .tp_richcompare = Filter_richcompare,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = Filter_doc,
    .tp_methods = Filter_methods,
    .tp_getset = Filter_getset,
    .tp_init = (initproc)Filter_init,
    .tp_new = Filter_new,
};

/* ---- module functions ---------------------------------------------------- */

static PyObject *mod_open(PyObject *m, PyObject *args, PyObject *kw)
{
    static char *names[] = {"path", "mmap", "trust", NULL};
    PyObject *path;
    int map = 0, trust = 0, rc;
    amq_filter *f = NULL;
    amq_errinfo err;
    (void)m;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|$pp", names, PyUnicode_FSConverter, &path,
                                     &map, &trust))
        return NULL;
    memset(&err, 0, sizeof(err));
    Py_BEGIN_ALLOW_THREADS
    rc = amq_filter_open(PyBytes_AS_STRING(path),
                         (map ? AMQ_OPEN_MMAP : 0u) | (trust ? AMQ_OPEN_TRUST : 0u), NULL, &f,
                         &err);
    Py_END_ALLOW_THREADS
    if (rc != AMQ_OK) {
        PyObject *r = raise_status(rc, &err, PyBytes_AS_STRING(path));
        Py_DECREF(path);
        return r;
    }
    Py_DECREF(path);
    return (PyObject *)wrap(f);
}

/* ---- static kinds: build from every key ----------------------------------- */

/* Feeds a keyset to a builder: a buffer's keys hashed without the GIL, a
 * list's as SLICE says.  Returns a status, or -1 with an exception
 * raised. */
static int feed_builder(amq_builder *bld, const amq_config *cfg, const keyset *ks)
{
    hasher hs = {NULL, cfg->hash_algo, cfg->seed};
    sink s = {NULL, 0, NULL, NULL, bld, NULL};
    int rc;

    if (ks->shape == KEYS_LIST)
        return sink_list(ks, &hs, &s);
    Py_BEGIN_ALLOW_THREADS
    rc = sink_buffer(ks, &hs, &s);
    Py_END_ALLOW_THREADS
    return rc;
}

/* build()'s chunks of an iterable, fed to its builder. */
typedef struct {
    amq_builder *bld;
    const amq_config *cfg;
} feed_ctx;

static int feed_chunk(void *ctx, const keyset *ks)
{
    const feed_ctx *fc = ctx;
    return feed_builder(fc->bld, fc->cfg, ks);
}

/* PyUnicode_FSConverter taking None as "not given" (*out stays NULL), for a
 * keyword whose default is None. */
static int fs_path_or_none(PyObject *o, void *out)
{
    if (o == Py_None)
        return 1;
    return PyUnicode_FSConverter(o, out);
}

static PyObject *mod_build(PyObject *m, PyObject *args, PyObject *kw)
{
    static char *names[] = {"keys", "kind", "fpp", "hash", "seed", "fingerprint_bits",
                            "arity", "threads", "tmpdir", "memory", "width", NULL};
    PyObject *keys, *tmpdir = NULL;
    const char *kind_name = "fuse", *hash_name = NULL;
    double fpp = 0.01;
    uint64_t seed = 0, memory = 0;
    uint32_t fpbits = 0, arity = 0, threads = 0, kind, algo;
    Py_ssize_t width = 0;
    amq_config cfg;
    amq_errinfo err;
    amq_builder *bld = NULL;
    amq_filter *f = NULL;
    keyset ks;
    int rc;
    (void)m;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|s$dzO&O&O&O&O&O&n", names, &keys,
                                     &kind_name, &fpp, &hash_name, conv_seed, &seed,
                                     conv_fingerprint_bits, &fpbits, conv_arity, &arity,
                                     conv_threads, &threads, fs_path_or_none, &tmpdir,
                                     conv_memory, &memory,
                                     &width))
        return NULL;
    if (finite_arg("fpp", fpp) != 0)
        goto fail;
    if (parse_kind(kind_name, &kind) != 0)
        goto fail;
    if (!amq_kind_is_static(kind)) {
        PyErr_Format(PyExc_ValueError, "'%s' is not a static kind: create it with "
                     "amq.Filter(kind='%s', ...) and add keys", kind_name, kind_name);
        goto fail;
    }
    if (kind != AMQ_KIND_FUSE && kw != NULL) {
        /* a ribbon filter is sized from fpp alone: refused, not ignored */
        static const char *const fuse_only[] = {"arity", "fingerprint_bits"};
        size_t i;
        for (i = 0; i < sizeof fuse_only / sizeof fuse_only[0]; i++)
            if (PyDict_GetItemString(kw, fuse_only[i]) != NULL) {
                PyErr_Format(PyExc_ValueError, "%s applies to the kind fuse only; a %s "
                             "filter has no %s", fuse_only[i], amq_kind_name(kind),
                             fuse_only[i]);
                goto fail;
            }
    }
    amq_config_init(&cfg, kind);
    algo = cfg.hash_algo; /* None: the kind's default (fuse: vmulshift, ribbon: xxh3) */
    if (hash_name != NULL && amq_hash_algo_from_name(hash_name, &algo) != AMQ_OK) {
        unknown_hash(hash_name);
        goto fail;
    }
    cfg.hash_algo = algo;
    cfg.seed = seed;
    cfg.fpp = fpp;
    cfg.fingerprint_bits = fpbits;
    cfg.arity = arity;
    cfg.threads = threads;
    if (check_seed(algo, seed) != 0)
        goto fail;
    memset(&err, 0, sizeof(err));
    rc = amq_hash_check(algo, seed);
    if (rc == AMQ_OK)
        rc = amq_builder_new(&cfg, tmpdir ? PyBytes_AS_STRING(tmpdir) : NULL, (size_t)memory,
                             &bld, &err);
    if (rc != AMQ_OK) {
        raise_status(rc, &err, "cannot build the filter");
        goto fail;
    }
    if (width > 0 || PyObject_CheckBuffer(keys) || PyList_Check(keys) || PyTuple_Check(keys)) {
        if (keyset_init(keys, width, 0, &ks) != 0) {
            keyset_release(&ks);
            goto fail;
        }
        rc = feed_builder(bld, &cfg, &ks);
        keyset_release(&ks);
    } else if (PyUnicode_Check(keys) || PyBytes_Check(keys)) {
        PyErr_SetString(PyExc_TypeError, "build() takes keys, not one str or bytes");
        goto fail;
    } else {
        feed_ctx fc = {bld, &cfg};
        rc = each_chunk(keys, feed_chunk, &fc);
    }
    if ((rc == AMQ_EIO || rc == AMQ_ENOSPC) && !PyErr_Occurred()) {
        /* the builder's adds report a spill that failed by status alone; a full
         * disk is one too, and the user must learn which disk */
        const char *dir = tmpdir != NULL ? PyBytes_AS_STRING(tmpdir) : getenv("TMPDIR");
        PyErr_Format(PyExc_OSError, "cannot build the filter: cannot write its temporary "
                     "files (the hashes past memory=%llu bytes) in %s%s%s",
                     (unsigned long long)(memory != 0 ? memory : (uint64_t)256 << 20),
                     dir != NULL && dir[0] != '\0' ? dir : "/tmp",
                     tmpdir != NULL ? " (tmpdir)" : " ($TMPDIR, else /tmp; tmpdir=... to choose)",
                     rc == AMQ_ENOSPC ? ": no space left on device" : "");
        goto fail;
    }
    if (rc != AMQ_OK) {
        if (!PyErr_Occurred())
            raise_status(rc, NULL, "cannot build the filter");
        goto fail;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = amq_builder_finish(bld, &f, &err);
    Py_END_ALLOW_THREADS
    amq_builder_free(bld);
    bld = NULL;
    Py_XDECREF(tmpdir);
    if (rc != AMQ_OK)
        return raise_status(rc, &err, "cannot build the filter");
    return (PyObject *)wrap(f);
fail:
    amq_builder_free(bld);
    Py_XDECREF(tmpdir);
    return NULL;
}

static PyObject *mod_import_guava(PyObject *m, PyObject *data)
{
    Py_buffer v;
    amq_bloom *b = NULL;
    amq_filter *f = NULL;
    amq_errinfo err;
    int rc;
    (void)m;

    if (PyObject_GetBuffer(data, &v, PyBUF_CONTIG_RO) != 0)
        return NULL;
    memset(&err, 0, sizeof(err));
    rc = amq_guava_deserialize(v.buf, (size_t)v.len, NULL, &b, &err);
    PyBuffer_Release(&v);
    if (rc != AMQ_OK)
        return raise_status(rc, &err, "not a Guava BloomFilter");
    rc = amq_filter_from_bloom(b, &f);
    if (rc != AMQ_OK)
        return raise_status(rc, NULL, "import_guava");
    return (PyObject *)wrap(f);
}

/* Hash functions: key as in Filter.add, a seed of up to seed_bits bits
 * (64, 32, or 0 for FNV-1a, which takes none); the key is taken first, so
 * that a wrong key is reported before a wrong seed. */
static int hash_args(PyObject *args, PyObject *kw, keyref *k, unsigned long long *seed,
                     int seed_bits)
{
    static char *names[] = {"key", "seed", NULL};
    PyObject *key;
    uint64_t s = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O&", names, &key, conv_seed, &s))
        return -1;
    if (key_get(key, k) != 0)
        return -1;
    if ((seed_bits == 32 && s > UINT32_MAX) || (seed_bits == 0 && s != 0)) {
        key_put(k);
        PyErr_SetString(PyExc_ValueError, seed_bits == 32 ? "this hash takes a 32-bit seed"
                                                          : "FNV-1a takes no seed");
        return -1;
    }
    *seed = s;
    return 0;
}

static PyObject *h_murmur3_32(PyObject *m, PyObject *args, PyObject *kw)
{
    keyref k;
    unsigned long long seed;
    uint32_t h;
    (void)m;
    if (hash_args(args, kw, &k, &seed, 32) != 0)
        return NULL;
    h = amq_murmur3_32(k.p, (size_t)k.len, (uint32_t)seed);
    key_put(&k);
    return PyLong_FromUnsignedLong(h);
}

static PyObject *h_murmur3_128(PyObject *m, PyObject *args, PyObject *kw)
{
    keyref k;
    unsigned long long seed;
    uint64_t out[2];
    PyObject *lo, *hi, *shift, *t, *r;
    (void)m;
    if (hash_args(args, kw, &k, &seed, 32) != 0)
        return NULL;
    amq_murmur3_x64_128(k.p, (size_t)k.len, (uint32_t)seed, out);
    key_put(&k);
    /* The reference's 16 output bytes read as a little-endian integer:
     * h1 in the low 64 bits (what mmh3.hash128 returns). */
    lo = PyLong_FromUnsignedLongLong(out[0]);
    hi = PyLong_FromUnsignedLongLong(out[1]);
    shift = PyLong_FromLong(64);
    t = (lo && hi && shift) ? PyNumber_Lshift(hi, shift) : NULL;
    r = t ? PyNumber_Or(t, lo) : NULL;
    Py_XDECREF(lo);
    Py_XDECREF(hi);
    Py_XDECREF(shift);
    Py_XDECREF(t);
    return r;
}

static PyObject *h_u64(PyObject *args, PyObject *kw, int which)
{
    keyref k;
    unsigned long long seed;
    uint64_t h = 0;
    if (hash_args(args, kw, &k, &seed, which >= 2 ? 0 : 64) != 0)
        return NULL;
    switch (which) {
    case 0:
        h = amq_murmur64a(k.p, (size_t)k.len, seed);
        break;
    case 1:
        h = amq_xxh3_64(k.p, (size_t)k.len, seed);
        break;
    case 2:
        h = amq_fnv1a_64(k.p, (size_t)k.len);
        break;
    default:
        h = amq_fnv1a_32(k.p, (size_t)k.len);
        break;
    }
    key_put(&k);
    return PyLong_FromUnsignedLongLong(h);
}

static PyObject *h_murmur64a(PyObject *m, PyObject *a, PyObject *kw) { (void)m; return h_u64(a, kw, 0); }
static PyObject *h_xxh3_64(PyObject *m, PyObject *a, PyObject *kw) { (void)m; return h_u64(a, kw, 1); }
static PyObject *h_fnv1a_64(PyObject *m, PyObject *a, PyObject *kw) { (void)m; return h_u64(a, kw, 2); }
static PyObject *h_fnv1a_32(PyObject *m, PyObject *a, PyObject *kw) { (void)m; return h_u64(a, kw, 3); }

/* The hash named, checked with its seed (amq_hash_check): 0, or -1 with
 * ValueError for an unknown name or the library's error named by it. */
static int parse_hash(const char *name, uint64_t seed, uint32_t *algo)
{
    int rc;
    if (amq_hash_algo_from_name(name, algo) != AMQ_OK)
        return unknown_hash(name);
    if (check_seed(*algo, seed) != 0)
        return -1;
    rc = amq_hash_check(*algo, seed);
    if (rc != AMQ_OK) {
        raise_status(rc, NULL, name);
        return -1;
    }
    return 0;
}

static PyObject *h_key(PyObject *m, PyObject *args, PyObject *kw)
{
    static char *names[] = {"key", "algo", "seed", NULL};
    PyObject *key;
    const char *algo_name = "xxh3";
    uint64_t seed = 0;
    uint32_t algo;
    keyref k;
    amq_hash128 h;
    (void)m;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|sO&", names, &key, &algo_name, conv_seed,
                                     &seed))
        return NULL;
    if (parse_hash(algo_name, seed, &algo) != 0)
        return NULL;
    if (key_get(key, &k) != 0)
        return NULL;
    h = amq_hash_key(algo, seed, k.p, (size_t)k.len);
    key_put(&k);
    return Py_BuildValue("(KK)", (unsigned long long)h.h1, (unsigned long long)h.h2);
}

/* The partition of `partitions` each key of a sequence goes to, as a partitioned filter with
 * this hash chooses it (amq_partition_index): the routing of a filter sharded by partition
 * (docs/cluster.md), computed by the library rather than again in Python. */
static PyObject *h_partition_index(PyObject *m, PyObject *args, PyObject *kw)
{
    static char *names[] = {"keys", "partitions", "algo", "seed", NULL};
    PyObject *keys, *seq, *out = NULL;
    const char *algo_name = "xxh3";
    uint64_t seed = 0;
    uint32_t algo, parts = 0;
    Py_ssize_t i, n;
    (void)m;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO&|sO&", names, &keys, conv_partitions,
                                     &parts, &algo_name, conv_seed, &seed))
        return NULL;
    if (parts < 1 || parts > AMQ_PARTITIONED_MAX_PARTITIONS) {
        PyErr_Format(PyExc_ValueError, "partitions must be in [1, %u]",
                     AMQ_PARTITIONED_MAX_PARTITIONS);
        return NULL;
    }
    if (parse_hash(algo_name, seed, &algo) != 0)
        return NULL;
    seq = PySequence_Fast(keys, "keys must be a sequence");
    if (seq == NULL)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    out = PyList_New(n);
    for (i = 0; out != NULL && i < n; i++) {
        keyref k;
        amq_hash128 h;
        PyObject *v;
        if (key_get(PySequence_Fast_ITEMS(seq)[i], &k) != 0) {
            Py_CLEAR(out);
            break;
        }
        h = amq_hash_key(algo, seed, k.p, (size_t)k.len);
        key_put(&k);
        v = PyLong_FromUnsignedLong(amq_partition_index(parts, h));
        if (v == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, v);
    }
    Py_DECREF(seq);
    return out;
}

/* The kinds this libamq has, by name (kind values are below 64). */
static PyObject *mod_kinds(PyObject *m, PyObject *unused)
{
    PyObject *list = PyList_New(0), *name;
    uint32_t k;
    (void)m;
    (void)unused;
    for (k = 1; list != NULL && k < 64; k++) {
        if (amq_kind_name(k) == NULL)
            continue;
        name = PyUnicode_FromString(amq_kind_name(k));
        if (name == NULL || PyList_Append(list, name) != 0)
            Py_CLEAR(list);
        Py_XDECREF(name);
    }
    return list;
}

static PyObject *mod_list_gil_releases(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyLong_FromSsize_t(list_gil_releases);
}

static PyObject *mod_library_version(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyUnicode_FromString(amq_version_string());
}

#define KW (PyCFunction)(void (*)(void))
static PyMethodDef module_methods[] = {
    {"open", KW mod_open, METH_VARARGS | METH_KEYWORDS,
     "open(path, *, mmap=False, trust=False)\n--\n\nOpens an amq file. mmap=True maps "
     "it read-only and queries it in place\n(shared by every process mapping it); trust=True "
     "skips the payload\nchecksum so that only the pages a query touches are read. Raises\n"
     "CorruptFileError (with the library's message) for a damaged file, OSError\nfor I/O."},
    {"build", KW mod_build, METH_VARARGS | METH_KEYWORDS,
     "build(keys, kind='fuse', *, fpp=0.01, hash=None, seed=0, fingerprint_bits=0, "
     "arity=0, threads=0, tmpdir=None, memory=0, width=0)\n--\n\n"
     "A static filter (kind 'fuse' or 'ribbon') of every key of keys: a list or\n"
     "array (shapes as Filter.add_many) or any iterable, read in chunks. Near\n"
     "the space bound log2(1/fpp) bits per key; takes no adds afterwards.\n"
     "fingerprint_bits (8 or 16; 0: from fpp) and arity (3 or 4; 0: 3) are\n"
     "fuse's: a ribbon filter is sized from fpp alone and refuses them.\n"
     "hash: None takes the kind's default ('vmulshift' for 'fuse', 'xxh3' for\n"
     "'ribbon').\n"
     "Hashes spill to temporary files in tmpdir past `memory` bytes (0: 256\n"
     "MiB), so key sets larger than memory build. Duplicates are allowed.\n"
     "threads is reserved: 0 or 1 (the build runs on one thread; another\n"
     "count is a ValueError)."},
    {"import_guava", (PyCFunction)mod_import_guava, METH_O,
     "import_guava(data, /)\n--\n\nA filter from Guava's BloomFilter.writeTo bytes (answers "
     "as Guava's\nmightContain for UTF-8 string funnels)."},
    {"kinds", (PyCFunction)mod_kinds, METH_NOARGS,
     "kinds()\n--\n\nThe kinds of filter this libamq has."},
    {"library_version", (PyCFunction)mod_library_version, METH_NOARGS,
     "library_version()\n--\n\nThe version of libamq this module is built on."},
    {"_list_gil_releases", (PyCFunction)mod_list_gil_releases, METH_NOARGS, NULL},
    {"_before_fork", (PyCFunction)mod_before_fork, METH_NOARGS, NULL},
    {"_after_fork_parent", (PyCFunction)mod_after_fork_parent, METH_NOARGS, NULL},
    {"_after_fork_child", (PyCFunction)mod_after_fork_child, METH_NOARGS, NULL},
    {"_murmur3_32", KW h_murmur3_32, METH_VARARGS | METH_KEYWORDS, NULL},
    {"_murmur3_128", KW h_murmur3_128, METH_VARARGS | METH_KEYWORDS, NULL},
    {"_murmur64a", KW h_murmur64a, METH_VARARGS | METH_KEYWORDS, NULL},
    {"_xxh3_64", KW h_xxh3_64, METH_VARARGS | METH_KEYWORDS, NULL},
    {"_fnv1a_64", KW h_fnv1a_64, METH_VARARGS | METH_KEYWORDS, NULL},
    {"_fnv1a_32", KW h_fnv1a_32, METH_VARARGS | METH_KEYWORDS, NULL},
    {"_hash_key", KW h_key, METH_VARARGS | METH_KEYWORDS, NULL},
    {"_hash_names", (PyCFunction)h_names, METH_NOARGS, NULL},
    {"_partition_index", KW h_partition_index, METH_VARARGS | METH_KEYWORDS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "amq._amq",
    .m_doc = "The C extension of the amq package (libamq).",
    .m_size = -1,
    .m_methods = module_methods,
};

static PyObject *new_error(PyObject *m, const char *name, PyObject *bases, const char *doc)
{
    char full[64];
    PyObject *e;
    snprintf(full, sizeof(full), "amq.%s", name);
    e = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
    if (e == NULL)
        return NULL;
    Py_INCREF(e);
    if (PyModule_AddObject(m, name, e) != 0) {
        Py_DECREF(e);
        return NULL;
    }
    return e;
}

/* os.register_at_fork(before=..., after_in_parent=..., after_in_child=...) with
 * the module's fork hooks, once a process (a second set would wait for the
 * locks the first took).  0, or -1 with an exception. */
static int register_fork_hooks(PyObject *m)
{
    static int done;
    PyObject *os, *reg, *kw = NULL, *args = NULL, *r = NULL;
    static const char *const hooks[][2] = {{"before", "_before_fork"},
                                           {"after_in_parent", "_after_fork_parent"},
                                           {"after_in_child", "_after_fork_child"}};
    size_t i;
    int rc = -1;

    if (done)
        return 0;
    os = PyImport_ImportModule("os");
    if (os == NULL)
        return -1;
    reg = PyObject_GetAttrString(os, "register_at_fork");
    Py_DECREF(os);
    if (reg == NULL) { /* no fork on this platform */
        PyErr_Clear();
        return 0;
    }
    kw = PyDict_New();
    args = PyTuple_New(0);
    if (kw == NULL || args == NULL)
        goto done;
    for (i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
        PyObject *fn = PyObject_GetAttrString(m, hooks[i][1]);
        int bad = fn == NULL || PyDict_SetItemString(kw, hooks[i][0], fn) != 0;
        Py_XDECREF(fn);
        if (bad)
            goto done;
    }
    r = PyObject_Call(reg, args, kw);
    if (r != NULL) {
        done = 1;
        rc = 0;
    }
done:
    Py_XDECREF(r);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_DECREF(reg);
    return rc;
}

/* The library's errors below amq.Error, each also under the built-in
 * exception (if any) that code catching Python's own would expect. */
static const struct {
    PyObject **type;
    const char *name;
    PyObject **also;
    const char *doc;
} errors[] = {
    {&CorruptFileError, "CorruptFileError", &PyExc_ValueError,
     "A file or bytes that are not a valid filter (bad magic, truncated, checksum "
     "mismatch, ...)."},
    {&FilterFullError, "FilterFullError", NULL,
     "A fixed-size filter is full, or a growing one at its limit; nothing was changed."},
    {&ReadOnlyError, "ReadOnlyError", NULL, "A write to a read-only (memory-mapped) filter."},
    {&UnsupportedError, "UnsupportedError", &PyExc_TypeError,
     "The operation does not exist for this kind (e.g. remove on a Bloom filter)."},
    {&IncompatibleError, "IncompatibleError", &PyExc_ValueError,
     "Filters of different kinds or geometries merged."},
};

PyMODINIT_FUNC PyInit__amq(void)
{
    PyObject *m, *bases;
    size_t i;

    if (PyType_Ready(&FilterType) < 0)
        return NULL;
    m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&FilterType);
    if (PyModule_AddObject(m, "Filter", (PyObject *)&FilterType) != 0)
        goto fail;
    Error = new_error(m, "Error", NULL, "Base of the errors libamq reports.");
    if (Error == NULL)
        goto fail;
    for (i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
        bases = errors[i].also != NULL ? PyTuple_Pack(2, Error, *errors[i].also) : NULL;
        if (errors[i].also != NULL && bases == NULL)
            goto fail;
        *errors[i].type = new_error(m, errors[i].name, bases != NULL ? bases : Error,
                                    errors[i].doc);
        Py_XDECREF(bases);
        if (*errors[i].type == NULL)
            goto fail;
    }
    if (register_fork_hooks(m) != 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
