/*
 * kinds.c - whether a filter can take adds from several threads.
 *
 * The blocked Bloom and partitioned kinds take concurrent adds once
 * switched to their concurrent mode (atomic OR); the others need one
 * writer and answer AMQ_EUNSUPPORTED.
 */
#include "cli.h"

int cli_filter_concurrent_adds(amq_filter *f)
{
    return amq_filter_set_concurrent(f, 1) == AMQ_OK;
}
