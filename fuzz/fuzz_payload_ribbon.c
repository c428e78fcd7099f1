/*
 * fuzz_payload_ribbon.c - the ribbon kind's parameter block and payload (partitions
 * and their index), framed in a valid container (see payload.h).
 */
#define FZ_KIND AMQ_KIND_RIBBON
#include "payload.h"
