/*
 * test_filter.c - what many tests need of a filter (see test.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "amq.h"
#include "amq/inplace.h"
#include "test.h"

uint8_t *test_serialized(const amq_filter *f, size_t *len)
{
    uint64_t size;
    uint8_t *buf;
    size_t got;
    if (amq_filter_serialized_size(f, &size) != AMQ_OK || (buf = malloc((size_t)size)) == NULL)
        return NULL;
    if (amq_filter_serialize(f, buf, (size_t)size, &got) != AMQ_OK) {
        free(buf);
        return NULL;
    }
    if (len != NULL)
        *len = got;
    return buf;
}

int test_cut_short_inplace_add(const char *path, const char *jpath,
                               void (*add)(struct amq_filter *, unsigned, unsigned),
                               unsigned from, unsigned to)
{
    struct stat st;
    amq_filter *f;
    amq_inplace *ip;
    pid_t pid;
    int i, status;
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) { /* waits between its journal (written, fsync'd) and the file */
        setenv("AMQ_TEST_JOURNAL_DELAY", "60", 1);
        if (amq_inplace_open(path, &f, &ip, NULL) != AMQ_OK)
            _exit(2);
        add(f, from, to);
        (void)amq_inplace_commit(ip, f, NULL, NULL);
        _exit(3);
    }
    for (i = 0; i < 2000 && (stat(jpath, &st) != 0 || st.st_size == 0); i++)
        usleep(5000);
    usleep(200000); /* its one write and fsync done */
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && stat(jpath, &st) == 0 && st.st_size > 0 ? 0 : -1;
}

uint8_t *test_read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n = 0;
    if (fp == NULL)
        return NULL;
    if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) > 0 && fseek(fp, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n)) != NULL && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    if (buf != NULL)
        *len = (size_t)n;
    return buf;
}

int test_write_file(const char *path, const uint8_t *buf, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (fp == NULL)
        return -1;
    if (fwrite(buf, 1, len, fp) != len) {
        fclose(fp);
        return -1;
    }
    return fclose(fp);
}

void test_add_u32_keys(amq_filter *f, unsigned from, unsigned to)
{
    unsigned i;
    for (i = from; i < to; i++)
        if (amq_filter_add(f, &i, sizeof i) < 0)
            return;
}

unsigned test_count_u32_keys(const amq_filter *f, unsigned from, unsigned to)
{
    unsigned i, n = 0;
    for (i = from; i < to; i++)
        n += amq_filter_contains(f, &i, sizeof i) == 1;
    return n;
}

uint64_t test_stream_key(uint64_t i, uint64_t seed)
{
    uint64_t st = seed << 40 ^ i;
    return test_rand(&st);
}

amq_hash128 test_stream_hash(const amq_filter *f, uint64_t i, uint64_t seed)
{
    uint64_t k = test_stream_key(i, seed);
    return amq_filter_hash(f, &k, sizeof k);
}

int test_stream_add(amq_filter *f, uint64_t from, uint64_t to, uint64_t seed)
{
    uint64_t i;
    int rc;
    for (i = from; i < to; i++)
        if ((rc = amq_filter_add_hash(f, test_stream_hash(f, i, seed))) != 1)
            return rc;
    return 1;
}

uint64_t test_stream_missing(const amq_filter *f, uint64_t from, uint64_t to, uint64_t seed)
{
    uint64_t i, n = 0;
    for (i = from; i < to; i++) {
        const uint64_t k = test_stream_key(i, seed);
        const int by_hash = amq_filter_contains_hash(f, test_stream_hash(f, i, seed));
        const int by_key = amq_filter_contains(f, &k, sizeof k);
        n += (uint64_t)(by_hash != 1 || by_key != 1);
    }
    return n;
}

uint64_t test_stream_hits(const amq_filter *f, uint64_t n, uint64_t seed)
{
    uint64_t i, fp = 0;
    for (i = 0; i < n; i++)
        fp += (uint64_t)amq_filter_contains_hash(f, test_stream_hash(f, i, seed));
    return fp;
}

typedef struct field_pick {
    const char *name;
    uint64_t u64;
    double f64;
    int found;
} field_pick;

static int pick(void *ctx, const amq_field *fd)
{
    field_pick *p = ctx;
    if (strcmp(fd->name, p->name) == 0) {
        p->u64 = fd->u64;
        p->f64 = fd->f64;
        p->found++;
    }
    return 0;
}

uint64_t test_field_u64(const amq_filter *f, const char *name)
{
    field_pick p = {name, 0, 0.0, 0};
    (void)amq_filter_describe(f, pick, &p);
    return p.found == 1 ? p.u64 : UINT64_MAX;
}

double test_field_f64(const amq_filter *f, const char *name)
{
    field_pick p = {name, 0, 0.0, 0};
    (void)amq_filter_describe(f, pick, &p);
    return p.found == 1 ? p.f64 : NAN;
}
