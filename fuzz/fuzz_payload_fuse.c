/*
 * fuzz_payload_fuse.c - the fuse kind's parameter block and payload (partitions
 * and their index), framed in a valid container (see payload.h).
 */
#define FZ_KIND AMQ_KIND_FUSE
#include "payload.h"
