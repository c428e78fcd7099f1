/*
 * test_streams.c - filter files that are not regular files (pipes, FIFOs,
 * character devices): amq_filter_open reads them into memory, and must
 * read only as far as a filter file can go - never "until memory runs
 * out" on an endless stream.  alarm() turns a hang into a failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "amq.h"
#include "common/container.h"
#include "test.h"

static void on_alarm(int sig)
{
    static const char msg[] = "test_streams: timed out (an endless stream was read on)\n";
    (void)sig;
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

static uint8_t *serialized(size_t *len)
{
    amq_config cfg;
    amq_filter *f;
    uint64_t size;
    uint8_t *buf;
    unsigned i;
    char k[16];

    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.capacity = 1000;
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return NULL;
    for (i = 0; i < 500; i++)
        (void)amq_filter_add(f, k, (size_t)snprintf(k, sizeof k, "k%u", i));
    if (amq_filter_serialized_size(f, &size) != AMQ_OK || (buf = malloc((size_t)size)) == NULL)
        return NULL;
    if (amq_filter_serialize(f, buf, (size_t)size, len) != AMQ_OK)
        return NULL;
    amq_filter_free(f);
    return buf;
}

/* A child writing head (len bytes) to the FIFO at path, then zeros until
 * the reader goes away when endless is set. */
static pid_t feed(const char *path, const uint8_t *head, size_t len, int endless)
{
    static const uint8_t zeros[4096];
    pid_t pid = fork();
    int fd;

    if (pid != 0)
        return pid;
    signal(SIGPIPE, SIG_DFL);
    fd = open(path, O_WRONLY);
    if (fd < 0)
        _exit(3);
    if (len != 0 && write(fd, head, len) != (ssize_t)len)
        _exit(0);
    while (endless)
        if (write(fd, zeros, sizeof zeros) < 0)
            _exit(0);
    close(fd);
    _exit(0);
}

static int open_fifo(const uint8_t *head, size_t len, int endless, amq_errinfo *err)
{
    const char *fifo = test_path("stream.fifo");
    amq_filter *f = NULL;
    pid_t pid;
    int rc, st;

    unlink(fifo);
    if (mkfifo(fifo, 0600) != 0)
        return -1000;
    pid = feed(fifo, head, len, endless);
    rc = amq_filter_open(fifo, 0, NULL, &f, err);
    amq_filter_free(f);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    unlink(fifo);
    return rc;
}

TEST(stream_endless_zeros_is_refused_early)
{
    amq_filter *f = NULL;
    amq_errinfo err;

    signal(SIGALRM, on_alarm);
    alarm(20);
    CHECK_STATUS(amq_filter_open("/dev/zero", 0, NULL, &f, &err), AMQ_EMAGIC);
    CHECK(f == NULL);
    CHECK_STATUS(open_fifo(NULL, 0, 1, &err), AMQ_EMAGIC);
    alarm(0);
}

/* Issue 19: a valid header declaring a 2^42-bit (512 GiB) payload, then
 * endless zeros, is refused at the header - not read toward 512 GiB. */
TEST(stream_header_larger_than_memory_is_refused_early)
{
    amq_errinfo err;
    amq_container c;
    size_t len;
    uint8_t *buf = serialized(&len), *params;

    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_container_parse(buf, len, len, &c, NULL));
    params = malloc(c.params_len + 1);
    REQUIRE(params != NULL);
    memcpy(params, c.params, c.params_len);
    c.params = params;
    c.payload_len = (uint64_t)1 << 39;
    amq_container_write_header(&c, buf);
    signal(SIGALRM, on_alarm);
    alarm(20);
    CHECK_STATUS(open_fifo(buf, (size_t)c.payload_off, 1, &err), AMQ_ENOMEM);
    CHECK(strstr(err.msg, "memory") != NULL);
    alarm(0);
    free(params);
    free(buf);
}

TEST(stream_valid_filter_then_garbage)
{
    amq_errinfo err;
    size_t len;
    uint8_t *buf = serialized(&len);

    REQUIRE(buf != NULL);
    signal(SIGALRM, on_alarm);
    alarm(20);
    /* Exactly a filter: it loads. */
    CHECK_STATUS(open_fifo(buf, len, 0, &err), AMQ_OK);
    /* A filter followed by an endless stream: refused once the byte after
     * the declared end has arrived. */
    CHECK_STATUS(open_fifo(buf, len, 1, &err), AMQ_ECORRUPT);
    CHECK(strstr(err.msg, "after the payload") != NULL);
    /* Truncated: the header promises more than comes. */
    CHECK_STATUS(open_fifo(buf, len - 1, 0, &err), AMQ_ETRUNC);
    /* The magic, then endless zeros: refused on the header (version 0). */
    CHECK_STATUS(open_fifo(buf, 8, 1, &err), AMQ_EVERSION);
    /* A valid fixed header whose checksum does not hold, then zeros: the
     * read stops at the header instead of believing its sizes. */
    {
        uint8_t forged[128];
        memcpy(forged, buf, sizeof forged);
        forged[48 + 5] = 0x10; /* payload length + 2^40 */
        CHECK_STATUS(open_fifo(forged, sizeof forged, 1, &err), AMQ_ECHECKSUM);
    }
    alarm(0);
    free(buf);
}

TEST_MAIN()
