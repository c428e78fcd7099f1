/*
 * lblock.c - jbapple/libfilter's block filter, its own code (c/lib/block.c,
 * memory.c, util.c from AMQ_PEERS, built -std=c11 as the peers' README
 * says), behind bench/peers/peers.h.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "peers.h"

#ifdef AMQB_HAVE_LIBFILTER
#include "filter/block.h"

struct amqb_lblock {
    libfilter_block b;
};

int amqb_lblock_available(void)
{
    return 1;
}

amqb_lblock *amqb_lblock_new(size_t n, double fpp)
{
    amqb_lblock *x = calloc(1, sizeof *x);
    if (x == NULL)
        return NULL;
    if (libfilter_block_init(libfilter_block_bytes_needed((double)n, fpp), &x->b) != 0 ||
        x->b.block_.block == NULL) {
        free(x);
        return NULL;
    }
    return x;
}

void amqb_lblock_add(amqb_lblock *x, const uint64_t *keys, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        libfilter_block_add_hash(keys[i], &x->b);
}

uint64_t amqb_lblock_query(const amqb_lblock *x, const uint64_t *keys, size_t n)
{
    uint64_t c = 0;
    size_t i;
    for (i = 0; i < n; i++)
        c += libfilter_block_find_hash(keys[i], &x->b);
    return c;
}

uint64_t amqb_lblock_bytes(const amqb_lblock *x)
{
    return libfilter_block_size_in_bytes(&x->b);
}

void amqb_lblock_free(amqb_lblock *x)
{
    if (x == NULL)
        return;
    libfilter_block_destruct(&x->b);
    free(x);
}

#else /* the code is not here: its rows are skipped */

int amqb_lblock_available(void)
{
    return 0;
}

amqb_lblock *amqb_lblock_new(size_t n, double fpp)
{
    (void)n;
    (void)fpp;
    return NULL;
}

void amqb_lblock_add(amqb_lblock *x, const uint64_t *keys, size_t n)
{
    (void)x;
    (void)keys;
    (void)n;
}

uint64_t amqb_lblock_query(const amqb_lblock *x, const uint64_t *keys, size_t n)
{
    (void)x;
    (void)keys;
    (void)n;
    return 0;
}

uint64_t amqb_lblock_bytes(const amqb_lblock *x)
{
    (void)x;
    return 0;
}

void amqb_lblock_free(amqb_lblock *x)
{
    (void)x;
}

#endif
