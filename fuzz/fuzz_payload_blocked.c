/*
 * fuzz_payload_blocked.c - the blocked kind's parameter block and payload,
 * framed in a valid container (see payload.h).
 */
#define FZ_KIND AMQ_KIND_BLOCKED
#include "payload.h"
