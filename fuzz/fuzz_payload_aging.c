/*
 * fuzz_payload_aging.c - the aging kind's parameter block and payload,
 * framed in a valid container (see payload.h).
 */
#define FZ_KIND AMQ_KIND_AGING
#include "payload.h"
