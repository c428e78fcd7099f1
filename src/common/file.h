/*
 * file.h - reading files whole (mapped) and replacing them atomically.
 */
#ifndef AMQ_COMMON_FILE_H
#define AMQ_COMMON_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "amq.h"

/* A file's bytes: mmap'd (regular files) or read into memory (pipes,
 * character devices). */
typedef struct amq_mapped {
    const uint8_t *data;
    uint64_t size;
    void *map;      /* mmap base, or NULL */
    size_t map_len;
    uint8_t *heap;  /* a copy from heap_alloc (heap_cap bytes), or NULL */
    size_t heap_cap;
    amq_allocator heap_alloc;
} amq_mapped;

/* Up to n bytes at off, however many reads they take (one may come short), stopping at the
 * file's end: the count, or -1 (errno set). */
ssize_t amq_pread_most(int fd, void *buf, size_t n, uint64_t off);
/* All n bytes at off: 0, or -1 (errno set; EIO when the file ends first). */
int amq_pread_all(int fd, void *buf, size_t n, uint64_t off);

/* Reading a non-regular file grows a buffer up to this size. */
#define AMQ_MAX_STREAM_FILE ((uint64_t)1 << 40)

/* A pipe or device is read into memory: one whose valid header declares
 * more than amq_machine_memory() (physical memory, or AMQ_MAX_STREAM_FILE
 * when unknown) is refused as AMQ_ENOMEM before it is read. */
uint64_t amq_machine_memory(void);

/* A pipe's or device's copy comes from alloc (NULL: the default): the
 * allocator of the filter amq_filter_open makes, which a host counts. */
int amq_file_map(const char *path, const amq_allocator *alloc, amq_mapped *m, amq_errinfo *err);
void amq_file_unmap(amq_mapped *m);
/* Waits for the writers' lock on path (flock, shared: a writer in place
 * holds it exclusive; other readers go on), and returns a descriptor that
 * holds it until closed; -1 if path cannot be opened. */
int amq_file_lock_shared(const char *path);
/* Advises the kernel that m will be read at random (no read-ahead). */
void amq_file_advise_random(const amq_mapped *m);

/*
 * The one writer of files (amq_filter_save, the tool's outputs, the
 * Python binding's saves): struct amq_target is the opaque handle of
 * <amq/advanced.h>, whose comment there states the rules.  Its fields
 * are here for filter.c, which writes a filter into one.
 */
#define AMQ_PATH_CAP 4096

struct amq_target {
    unsigned flags;
    int fd;      /* the new contents: the temporary file, or the direct output; -1 */
    int lock_fd; /* the replaced file, flock'ed until close; -1 */
    int exists;  /* path named something when opened */
    int direct;  /* standard output or a device: written straight, nothing renamed */
    int slot;    /* the temporary file's slot in the signal registry; -1 */
    int held;    /* the locked file's slot in the table of locks held; -1 */
    int desc;    /* the open descriptor the path names (/dev/stdout...), written; -1 */
    unsigned mode;
    unsigned uid, gid;
    char given[AMQ_PATH_CAP]; /* as the caller named it: for messages */
    char path[AMQ_PATH_CAP];  /* symlinks followed */
    char tmp[AMQ_PATH_CAP];
};

/* amq_target_open and amq_target_close with the target (its three path
 * buffers) from a (NULL: the default): amq_filter_save takes it from the
 * filter's allocator, as all its memory. */
int amq_target_open_alloc(const char *path, unsigned flags, const amq_allocator *a,
                          struct amq_target **out, amq_errinfo *err);
void amq_target_close_alloc(struct amq_target *t, const amq_allocator *a);

/* Writes len bytes at offset of the temporary file (not for a direct
 * target: amq_target_is_direct). */
int amq_target_pwrite(struct amq_target *t, const void *data, size_t len, uint64_t offset,
                      amq_errinfo *err);
/* Reads back len bytes at offset of the temporary file (not for a direct
 * target): a writer that placed bytes out of order sums them afterwards. */
int amq_target_pread(struct amq_target *t, void *data, size_t len, uint64_t offset,
                     amq_errinfo *err);

#endif /* AMQ_COMMON_FILE_H */
