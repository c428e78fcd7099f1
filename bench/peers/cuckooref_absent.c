/*
 * cuckooref_absent.c - bench/peers/cuckooref.cc's functions when
 * efficient/cuckoofilter is not under AMQ_PEERS: its rows are skipped.
 */
#include "peers.h"

int amqb_cref_available(void)
{
    return 0;
}

amqb_cref *amqb_cref_new(size_t n)
{
    (void)n;
    return NULL;
}

uint64_t amqb_cref_add(amqb_cref *c, const uint64_t *keys, size_t n)
{
    (void)c;
    (void)keys;
    (void)n;
    return 0;
}

uint64_t amqb_cref_query(const amqb_cref *c, const uint64_t *keys, size_t n)
{
    (void)c;
    (void)keys;
    (void)n;
    return 0;
}

uint64_t amqb_cref_bytes(const amqb_cref *c)
{
    (void)c;
    return 0;
}

void amqb_cref_free(amqb_cref *c)
{
    (void)c;
}
