/*
 * cuckoo_internal.h - hooks of the native cuckoo filter for the tests.
 * Internal: not installed, not exported.
 */
#ifndef AMQ_CUCKOO_INTERNAL_H
#define AMQ_CUCKOO_INTERNAL_H

#include "amq/cuckoo.h"

/* on = 1: c's one-key 8-byte queries take the scalar path even where the
 * CPU has the vector one, so that one machine tests both; 0: the best. */
void amq_cuckoo_scalar_keys(amq_cuckoo *c, int on);

#endif /* AMQ_CUCKOO_INTERNAL_H */
