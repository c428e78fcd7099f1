/*
 * fuzz_payload_expandable.c - the expandable kind's parameter block and
 * payload (table and stash), framed in a valid container (see payload.h).
 */
#define FZ_KIND AMQ_KIND_EXPANDABLE
#include "payload.h"
