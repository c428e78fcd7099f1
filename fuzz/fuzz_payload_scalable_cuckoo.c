/*
 * fuzz_payload_scalable_cuckoo.c - the scalable-cuckoo kind's parameter block and
 * payload, framed in a valid container (see payload.h).
 */
#define FZ_KIND AMQ_KIND_SCALABLE_CUCKOO
#include "payload.h"
