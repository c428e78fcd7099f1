/*
 * fuzz_payload_cuckoo.c - the cuckoo kind's parameter block and
 * payload, framed in a valid container (see payload.h).
 */
#define FZ_KIND AMQ_KIND_CUCKOO
#include "payload.h"
