/*
 * amq.h - umbrella header of libamq, a library of approximate-membership
 * filters (Bloom, blocked Bloom, partitioned, cuckoo, scalable variants).
 *
 * Includes every stable header:
 *   amq/common.h            version, status codes, allocator, amq_slice
 *   amq/hash.h              hash functions and amq_hash128
 *   amq/filter.h            one handle for every kind, filter files
 *   amq/bloom.h, amq/blocked_bloom.h, amq/partitioned.h, amq/cuckoo.h,
 *   amq/scalable_bloom.h, amq/scalable_cuckoo.h   one header per family
 *   amq/policy.h            LevelDB-style filter blobs
 *   amq/guava.h             Guava's BloomFilter bytes
 *   amq/static.h            static kinds (fuse, ribbon): built once from all keys
 *   amq/aging.h             the aging kind: a sliding window of keys
 *   amq/compat.h            names renamed in 0.3, deprecated until 0.4
 * Define AMQ_ADVANCED_API before including it to get <amq/advanced.h> as
 * well (format internals and raw access, not frozen: see that header).
 */
#ifndef AMQ_H
#define AMQ_H

#include "amq/common.h"
#include "amq/hash.h"
#include "amq/bloom.h"
#include "amq/blocked_bloom.h"
#include "amq/partitioned.h"
#include "amq/cuckoo.h"
#include "amq/scalable_bloom.h"
#include "amq/scalable_cuckoo.h"
#include "amq/policy.h"
#include "amq/guava.h"
#include "amq/filter.h"
#include "amq/static.h"
#include "amq/aging.h"
#include "amq/compat.h"

#ifdef AMQ_ADVANCED_API
#include "amq/advanced.h"
#endif

#endif /* AMQ_H */
