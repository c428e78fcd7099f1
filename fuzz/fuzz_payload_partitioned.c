/*
 * fuzz_payload_partitioned.c - the partitioned kind's parameter block and payload,
 * framed in a valid container (see payload.h).
 */
#define FZ_KIND AMQ_KIND_PARTITIONED
#include "payload.h"
