/*
 * prefetch.h - the key stream of a batch loop over packed keys.
 *
 * A batch loop hashes packed keys in order while its reads of the filter
 * wait on memory.  The processor's own prefetcher should follow so plain a
 * stream, but on a Xeon (Sapphire Rapids) it missed it in some code
 * layouts, the loop then waiting on its key loads (docs/static.md, issue
 * 41's sixth round).  Every such loop therefore asks for its keys
 * AMQ_KEYS_AHEAD keys before it hashes them.
 */
#ifndef AMQ_COMMON_PREFETCH_H
#define AMQ_COMMON_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#define AMQ_KEYS_AHEAD 64

/* Key i + AMQ_KEYS_AHEAD of keys packed key_len bytes apart: a prefetch
 * past the end of the array is harmless (it never faults). */
static inline __attribute__((always_inline)) void amq_prefetch_keys(const uint8_t *keys,
                                                                    size_t key_len, size_t i)
{
    __builtin_prefetch(keys + key_len * (i + AMQ_KEYS_AHEAD), 0, 3);
}

#endif /* AMQ_COMMON_PREFETCH_H */
