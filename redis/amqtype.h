/*
 * amqtype.h - the settings of the amqfilter data type (amqtype.c) that the
 * module configs (config.c) reach.
 */
#ifndef AMQ_REDIS_AMQTYPE_H
#define AMQ_REDIS_AMQTYPE_H

#include <stdint.h>

/* Per-key size cap of AMQ.* keys in bytes (config amq-max-key-bytes; a
 * key's MAXSIZE wins): 1 GiB holds a 1e9-key ribbon filter at 1 %. */
#define AMQT_DEFAULT_MAX_KEY_BYTES ((uint64_t)1 << 30)
/* Most members AMQ.BUILD reads in one call (config amq-build-max-items):
 * the bound on its time (docs/redis.md has the figure). */
#define AMQT_DEFAULT_BUILD_MAX_ITEMS UINT64_C(100000)

extern uint64_t amqt_max_key_bytes;
extern uint64_t amqt_build_max_items;

#endif /* AMQ_REDIS_AMQTYPE_H */
