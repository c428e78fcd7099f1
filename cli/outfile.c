/*
 * outfile.c - writing a whole file of bytes (amq export) through the
 * tool's safe writer (target.c): atomically, locked, and never over a
 * text file or an amq filter the user did not mean to lose.
 */
#include <string.h>

#include "cli.h"

int cli_save_bytes(const char *path, const void *data, size_t len, int force)
{
    cli_target t;
    int rc;

    if (cli_target_open(&t, path, force ? CLI_TARGET_FORCE | CLI_TARGET_ANY : 0) != 0)
        return -1;
    rc = cli_target_write_bytes(&t, data, len);
    cli_target_release(&t);
    return rc;
}
