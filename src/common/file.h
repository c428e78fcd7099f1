/*
 * file.h - reading files whole (mapped) and replacing them atomically.
 */
#ifndef AMQ_COMMON_FILE_H
#define AMQ_COMMON_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "amq.h"

/* A file's bytes: mmap'd (regular files) or read into memory (pipes,
 * character devices). */
typedef struct amq_mapped {
    const uint8_t *data;
    uint64_t size;
    void *map;      /* mmap base, or NULL */
    size_t map_len;
    uint8_t *heap;  /* malloc'd copy, or NULL */
} amq_mapped;

/* Reading a non-regular file grows a buffer up to this size. */
#define AMQ_MAX_STREAM_FILE ((uint64_t)1 << 40)

/* A pipe or device is read into memory: one whose valid header declares
 * more than amq_machine_memory() (physical memory, or AMQ_MAX_STREAM_FILE
 * when unknown) is refused as AMQ_ENOMEM before it is read. */
uint64_t amq_machine_memory(void);

int amq_file_map(const char *path, amq_mapped *m, amq_errinfo *err);
void amq_file_unmap(amq_mapped *m);
/* Advises the kernel that m will be read at random (no read-ahead). */
void amq_file_advise_random(const amq_mapped *m);

/* A replacement of path in progress: a temporary file beside it. */
typedef struct amq_atomic {
    int fd;
    int excl;
    int lock_fd; /* the replaced file, flock'ed until commit or abort; -1 */
    char path[4096]; /* symlinks followed */
    char tmp[4096];
} amq_atomic;

/*
 * Creates the temporary file, with the rules of the amq tool's writer
 * (cli/target.c) for a filter output: a symlink is followed (the file it
 * names is replaced, the link stays); an existing file is replaced only if
 * it is a regular file that starts with the amq magic (AMQ_EEXIST
 * otherwise), is writable and has no other hard links (AMQ_EIO with
 * EACCES / EMLINK); it is locked (flock, exclusive, waiting for another
 * writer) until the commit, and its mode and owner are given to the new
 * file (or the save fails).  A new file gets 0666 & ~umask.  excl: fail
 * with AMQ_EEXIST if path exists.
 */
int amq_atomic_begin(amq_atomic *a, const char *path, int excl, amq_errinfo *err);
/* Writes len bytes at offset (retrying short writes and EINTR). */
int amq_atomic_pwrite(amq_atomic *a, const void *data, size_t len, uint64_t offset,
                      amq_errinfo *err);
/* fsync, rename over path (link for excl), fsync the directory. */
int amq_atomic_commit(amq_atomic *a, amq_errinfo *err);
/* Removes the temporary file; safe after a failed commit. */
void amq_atomic_abort(amq_atomic *a);

#endif /* AMQ_COMMON_FILE_H */
