/*
 * test_inplace_nomem.c - an in-place open out of memory while a cut-short
 * add's journal waits beside the file.  The in-place API takes no allocator,
 * so its memory is the C library's: this binary is linked with
 * -Wl,--wrap=malloc (the Makefile), and __wrap_malloc refuses the nth call
 * it is told to.  A refused allocation must fail the open and keep the
 * journal for the next open to apply; a journal removed unapplied loses the
 * keys the add had acknowledged to its journal.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amq/inplace.h"
#include "test.h"

#define NKEYS 400u

void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);

static unsigned long malloc_calls, malloc_fail_at; /* 0: none refused */

void *__wrap_malloc(size_t size)
{
    if (malloc_fail_at != 0 && ++malloc_calls == malloc_fail_at)
        return NULL;
    return __real_malloc(size);
}

/* Every allocation of an in-place open refused in turn, the file and its
 * journal as the killed add left them before each: after each refusal a
 * plain open must answer every key of the file and of the journal. */
TEST(inplace_open_out_of_memory_keeps_the_journal)
{
    char path[4096], jpath[4200];
    uint8_t *fbytes = NULL, *jbytes = NULL;
    size_t flen = 0, jlen = 0;
    amq_config cfg;
    amq_filter *f;
    amq_inplace *ip;
    unsigned long k;
    int rc, refused = 0;

    snprintf(path, sizeof path, "%s", test_path("nomem.amq"));
    snprintf(jpath, sizeof jpath, "%s/.nomem.amq.amqjournal", test_tmpdir());
    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.capacity = 10000;
    cfg.fpp = 0.001;
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    test_add_u32_keys(f, 0, NKEYS);
    REQUIRE_OK(amq_filter_set_chunked_checksum(f, 1));
    REQUIRE_OK(amq_filter_save(f, path, 0, NULL));
    amq_filter_free(f);
    /* a child adds NKEYS more in place and is killed between its journal and the file */
    REQUIRE(test_cut_short_inplace_add(path, jpath, test_add_u32_keys, NKEYS, 2 * NKEYS) == 0);
    REQUIRE((fbytes = test_read_file(path, &flen)) != NULL);
    REQUIRE((jbytes = test_read_file(jpath, &jlen)) != NULL);

    for (k = 1; k < 200; k++) {
        REQUIRE(test_write_file(path, fbytes, flen) == 0);
        REQUIRE(test_write_file(jpath, jbytes, jlen) == 0);
        malloc_calls = 0;
        malloc_fail_at = k;
        rc = amq_inplace_open(path, &f, &ip, NULL);
        malloc_fail_at = 0;
        if (rc == AMQ_OK) {
            amq_filter_free(f);
            amq_inplace_close(ip);
            if (malloc_calls < k)
                break; /* the open made fewer than k calls: every one was refused once */
        } else {
            CHECK_STATUS(rc, AMQ_ENOMEM);
            refused++;
        }
        /* the keys the add wrote to its journal are there, applied or still to apply */
        REQUIRE_OK(amq_filter_open(path, 0, NULL, &f, NULL));
        if (test_count_u32_keys(f, 0, 2 * NKEYS) != 2 * NKEYS)
            FAIL_AT_("malloc %lu of the in-place open refused (status %d): a later open answers "
                     "%u of %u keys",
                     k, rc, test_count_u32_keys(f, 0, 2 * NKEYS), 2 * NKEYS);
        amq_filter_free(f);
    }
    CHECK_GE(refused, 2);
    CHECK(k < 200);
    free(fbytes);
    free(jbytes);
    unlink(jpath);
    unlink(path);
}

TEST_MAIN()
