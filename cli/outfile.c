/*
 * outfile.c - writing a whole file of bytes (amq export) through the
 * tool's safe writer (target.c): atomically, locked, and never over a
 * text file or an amq filter the user did not mean to lose.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int cli_is_guava(const unsigned char *head, size_t n, uint64_t size)
{
    uint64_t longs;
    if (n < 6 || head[0] > 1 || head[1] == 0) /* strategy 0 or 1, at least one hash */
        return 0;
    longs = (uint64_t)head[2] << 24 | (uint64_t)head[3] << 16 | (uint64_t)head[4] << 8 | head[5];
    return size == 6 + 8 * longs;
}

int cli_is_resp(const unsigned char *head, size_t n, uint64_t size)
{
    (void)size;
    return n >= 2 && head[0] == '*' && head[1] >= '0' && head[1] <= '9'; /* a command array */
}

int cli_force_same_format(const char *path, int (*is_format)(const unsigned char *, size_t,
                                                             uint64_t),
                          const char *what)
{
    unsigned char head[16];
    struct stat st;
    ssize_t n;
    int fd;

    if (strcmp(path, "-") == 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0; /* new, standard output, a device or a pipe: written as without --force */
    fd = open(path, O_RDONLY | O_CLOEXEC);
    n = fd >= 0 ? read(fd, head, sizeof head) : -1;
    if (fd >= 0)
        close(fd);
    if (n >= 0 && is_format(head, (size_t)n, (uint64_t)st.st_size))
        return 0;
    cli_error("%s: exists and is not %s (--force replaces only a file of the format written); "
              "nothing changed",
              path, what);
    return -1;
}

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
