/*
 * outfile.c - writing a whole file of bytes atomically (amq export), the
 * way libamq saves filters: a temporary file in the same directory, fsync,
 * rename over the target, fsync of the directory.  A crash leaves the old
 * file or the new one; a failure leaves the old one and no temporary file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static int write_all(int fd, const uint8_t *p, size_t n)
{
    ssize_t w;
    while (n > 0) {
        w = write(fd, p, n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int cli_save_bytes(const char *path, const void *data, size_t len, int force)
{
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash != NULL ? (size_t)(slash - path) + 1 : 0;
    char *tmp, *dir;
    struct stat st;
    mode_t mode, mask;
    int fd, dfd, err;

    if (strcmp(path, "-") == 0) {
        if (write_all(STDOUT_FILENO, data, len) != 0) {
            cli_error("write error on standard output: %s", strerror(errno));
            return -1;
        }
        return 0;
    }
    if (stat(path, &st) == 0) {
        if (!force) {
            cli_error("%s: file exists (use --force to replace it)", path);
            return -1;
        }
        mode = st.st_mode & 07777;
    } else {
        mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    tmp = malloc(dirlen + 32);
    dir = malloc(dirlen + 2);
    if (tmp == NULL || dir == NULL) {
        free(tmp);
        free(dir);
        cli_error("out of memory");
        return -1;
    }
    memcpy(tmp, path, dirlen);
    strcpy(tmp + dirlen, ".amq-tmp-XXXXXX");
    memcpy(dir, path, dirlen);
    strcpy(dir + dirlen, ".");
    fd = mkstemp(tmp);
    if (fd < 0) {
        cli_error("%s: cannot create a file in its directory: %s", path, strerror(errno));
        goto fail_nofile;
    }
    if (fchmod(fd, mode) != 0 || write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        err = errno;
        cli_error("%s: %s", path, strerror(err));
        close(fd);
        goto fail;
    }
    if (close(fd) != 0) {
        cli_error("%s: %s", path, strerror(errno));
        goto fail;
    }
    if (rename(tmp, path) != 0) {
        cli_error("%s: cannot rename into place: %s", path, strerror(errno));
        goto fail;
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    free(tmp);
    free(dir);
    return 0;
fail:
    unlink(tmp);
fail_nofile:
    free(tmp);
    free(dir);
    return -1;
}
