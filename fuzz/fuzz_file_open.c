/*
 * fuzz_file_open.c - the same bytes as fuzz_container, but through
 * amq_filter_open: as a regular file (a memfd, mapped: copy and mmap,
 * verified and trusted) and as a pipe (read into memory, where the reader
 * must stop as soon as the bytes decide - src/common/file.c).
 *
 * Properties: every way agrees with amq_filter_deserialize on the same
 * bytes (same status) - but a pipe whose valid header declares more bytes
 * than the machine's memory is refused as AMQ_ENOMEM at once, where the
 * bytes in memory are AMQ_ETRUNC; an error names the file; a filter that
 * loads passes fz_check_filter; nothing leaks.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/container.h"
#define FZ_INPUT_IS_FILE /* extreme.h: the fields and checksums of the whole input */
#include "extreme_file.h"
#include "common/file.h"
#include "filter_checks.h"

#define MAX_PIPE 60000 /* under the default pipe buffer: no writer thread */

static int open_path(const char *path, unsigned flags, const uint8_t *data, size_t size)
{
    fz_load l;
    int rc;

    fz_load_begin(&l);
    rc = amq_filter_open(path, flags, &l.al, &l.f, &l.err);
    fz_load_end(&l, rc, data, size, flags);
    if (rc != AMQ_OK)
        FZ_CHECK(strstr(l.err.msg, path) != NULL, "the message does not name %s: %s", path,
                 l.err.msg);
    return rc;
}

/* A stream is read into memory: the reader refuses at once a valid header
 * that declares more than the machine holds (src/common/file.c). */
static int declares_more_than_memory(const uint8_t *data, size_t size)
{
    uint64_t need = 0;
    return amq_container_stream_need(data, size, &need) && need <= AMQ_MAX_STREAM_FILE &&
           need > amq_machine_memory();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    amq_filter *f = NULL;
    char path[64];
    unsigned flags;
    int fd, p[2], want, rc;

    want = amq_filter_deserialize(data, size, 0, NULL, &f, NULL);
    amq_filter_free(f);

    fd = memfd_create("fuzz-file", MFD_CLOEXEC);
    FZ_CHECK(fd >= 0, "memfd_create failed");
    FZ_CHECK(size == 0 || write(fd, data, size) == (ssize_t)size, "write failed");
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    for (flags = 0; flags < 4; flags++) {
        rc = open_path(path, flags, data, size);
        if (!(flags & AMQ_OPEN_TRUST))
            FZ_CHECK(rc == want, "file (flags %u): %d, from memory: %d", flags, rc, want);
        else
            FZ_CHECK(fz_trust_agrees(want, rc), "file (flags %u): %d, from memory: %d", flags,
                     rc, want);
    }
    close(fd);

    if (size <= MAX_PIPE) {
        FZ_CHECK(pipe(p) == 0, "pipe failed");
        FZ_CHECK(size == 0 || write(p[1], data, size) == (ssize_t)size, "pipe write failed");
        close(p[1]);
        snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
        rc = open_path(path, 0, data, size);
        FZ_CHECK(rc == want || (rc == AMQ_ENOMEM && want == AMQ_ETRUNC &&
                                declares_more_than_memory(data, size)),
                 "pipe: %d, from memory: %d", rc, want);
        close(p[0]);
    }
    return 0;
}
