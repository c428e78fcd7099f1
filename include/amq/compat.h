/*
 * amq/compat.h - the stable names renamed in 0.3 (issue 40: one word per
 * idea, docs/api.md "Glossary"), kept for one minor version: they compile
 * with a deprecation warning that names the new spelling, libamq.so still
 * exports them (programs linked against 0.2 keep running), and 0.4 removes
 * them.  Included by <amq.h> and by the headers that declared them.
 *
 * Renamed struct fields keep their old name the same way, as a deprecated
 * alias of the same storage (AMQ_RENAMED_FIELD in amq/common.h):
 * amq_sbloom_params error -> fpp, growth -> expansion; amq_sbloom_link_info
 * error -> fpp; amq_sbloom_info size -> info_bytes, num_filters -> links,
 * growth -> expansion; amq_scuckoo_params max_iterations -> max_kicks,
 * max_filters -> max_links; amq_scuckoo_info size -> info_bytes,
 * capacity -> slots, num_filters -> links, max_iterations -> max_kicks,
 * max_filters -> max_links.
 *
 * The renames of <amq/advanced.h>, which may change in any minor version,
 * have no old names here; scripts/rename-40.py rewrites a program's sources
 * to every new name.
 */
#ifndef AMQ_COMPAT_H
#define AMQ_COMPAT_H

#include "amq/common.h"
#include "amq/bloom.h"
#include "amq/aging.h"
#include "amq/scalable_cuckoo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* amq_guava_deserialize: AMQ_OK, AMQ_ETRUNC, AMQ_EUNSUPPORTED,
 * AMQ_ECORRUPT, AMQ_ENOMEM. */
AMQ_API int amq_guava_decode(const void *buf, size_t len, const amq_allocator *alloc,
                             amq_bloom **out, amq_errinfo *err)
    AMQ_DEPRECATED("renamed amq_guava_deserialize");
/* amq_guava_serialize: AMQ_OK, AMQ_EINCOMPAT, AMQ_EINVAL. */
AMQ_API int amq_guava_encode(const amq_bloom *b, void *buf, size_t cap, size_t *written,
                             amq_errinfo *err) AMQ_DEPRECATED("renamed amq_guava_serialize");
/* amq_guava_serialized_size: AMQ_OK, AMQ_EINCOMPAT. */
AMQ_API int amq_guava_encoded_size(const amq_bloom *b, size_t *size, amq_errinfo *err)
    AMQ_DEPRECATED("renamed amq_guava_serialized_size");

/* amq_aging_info_for: AMQ_OK, AMQ_ERANGE, AMQ_EOVERFLOW. */
AMQ_API int amq_aging_plan(uint64_t window, double fpp, amq_aging_info *info)
    AMQ_DEPRECATED("renamed amq_aging_info_for");

/* AMQ_SCUCKOO_MAX_LINKS. */
#define AMQ_SCUCKOO_MAX_FILTERS AMQ_SCUCKOO_MAX_LINKS

#ifdef __cplusplus
}
#endif

#endif /* AMQ_COMPAT_H */
