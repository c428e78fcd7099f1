/*
 * fuzz_journal.c - the journal an in-place add leaves beside its file
 * (src/common/journal.c): read by amq_filter_open, which reads the file as
 * the journal completes it, and applied for good by amq_inplace_open.
 *
 * The input is the journal.  Its file size, inode and checksum are set to
 * the file's (a Bloom filter of 1,000 keys with chunked checksums, written
 * again before each input) so that its records, not those fields, are what
 * varies.  Properties: no crash, overflow or leak (the replay runs under
 * ASan); amq_filter_open either loads or fails with a message naming the
 * file.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "amq.h"
#include "amq/inplace.h"
#include "common/container.h"
#include "common/endian.h"
#include "fuzz.h"

static char dir[64], path[128], jpath[160];
static uint8_t *orig;
static size_t orig_len;

static void setup(void)
{
    amq_config cfg;
    amq_filter *f = NULL;
    uint32_t i;
    int fd;
    snprintf(dir, sizeof dir, "%s", "/tmp/fuzz-journal-XXXXXX");
    FZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    snprintf(path, sizeof path, "%s/f.amq", dir);
    snprintf(jpath, sizeof jpath, "%s/.f.amq.amqjournal", dir);
    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.capacity = 1000;
    FZ_CHECK(amq_filter_new(&cfg, &f, NULL) == AMQ_OK, "filter");
    for (i = 0; i < 1000; i++)
        (void)amq_filter_add(f, &i, sizeof i);
    FZ_CHECK(amq_filter_set_chunked_checksum(f, 1) == AMQ_OK, "chunked");
    FZ_CHECK(amq_filter_save(f, path, 0, NULL) == AMQ_OK, "save");
    amq_filter_free(f);
    fd = open(path, O_RDONLY);
    FZ_CHECK(fd >= 0, "open");
    orig_len = (size_t)lseek(fd, 0, SEEK_END);
    orig = malloc(orig_len);
    FZ_CHECK(orig != NULL && pread(fd, orig, orig_len, 0) == (ssize_t)orig_len, "read");
    close(fd);
}

static void put(const char *p, const uint8_t *data, size_t size, int trunc)
{
    int fd = open(p, O_WRONLY | O_CREAT | (trunc ? O_TRUNC : 0), 0600);
    FZ_CHECK(fd >= 0, "open %s", p);
    FZ_CHECK(size == 0 || pwrite(fd, data, size, 0) == (ssize_t)size, "write %s", p);
    FZ_CHECK(ftruncate(fd, (off_t)size) == 0, "truncate %s", p);
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    amq_filter *f = NULL;
    amq_inplace *ip = NULL;
    amq_errinfo err;
    struct stat st;
    uint8_t *j;
    int rc;

    if (orig == NULL)
        setup();
    put(path, orig, orig_len, 0); /* the same inode: the journal names it */
    FZ_CHECK(stat(path, &st) == 0, "stat");
    j = malloc(size + 1);
    FZ_CHECK(j != NULL, "malloc");
    if (size != 0)
        memcpy(j, data, size);
    if (size >= 48) {
        amq_store64(j + 8, (uint64_t)st.st_size);
        amq_store64(j + 24, (uint64_t)st.st_ino);
        amq_store64(j + size - 8, amq_checksum(j, size - 8));
    }
    put(jpath, j, size, 1);
    free(j);

    err.msg[0] = '\0';
    rc = amq_filter_open(path, 0, NULL, &f, &err);
    if (rc == AMQ_OK)
        amq_filter_free(f);
    else
        FZ_CHECK(strstr(err.msg, path) != NULL, "the message does not name %s: %s", path,
                 err.msg);
    rc = amq_inplace_open(path, &f, &ip, NULL);
    if (rc == AMQ_OK) {
        amq_filter_free(f);
        amq_inplace_close(ip);
    }
    unlink(jpath);
    return 0;
}
