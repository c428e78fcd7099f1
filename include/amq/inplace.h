/*
 * amq/inplace.h - adding to a filter file in place, at a cost in
 * proportion to the keys added rather than to the file (docs/reliability.md,
 * "In-place adds").
 *
 * The file is mapped privately and writable; the filter is a view of the
 * mapping, so adds touch only the pages they change (copy on write).  The
 * commit finds those pages, writes them and the new header to a journal
 * beside the file ("DIR/.NAME.amqjournal", checksummed, fsync'd), then
 * over the file, fsyncs, and removes the journal.  A crash at any moment
 * leaves the old file, the new file, or a file and a valid journal that
 * every open (amq_filter_open, amq_inplace_open) applies first: the file is
 * never seen broken and no earlier key is lost.
 *
 * Only kinds whose adds only set bits in place (bloom, blocked) are
 * updated in place, and only files saved with a chunked payload checksum
 * (amq_filter_set_chunked_checksum): a Bloom add never clears a bit, so a
 * reader mapping the file during a commit sees each key's bits old or new,
 * never a false negative.  The caller serializes writers (amq add holds an
 * exclusive flock on the file).
 */
#ifndef AMQ_INPLACE_H
#define AMQ_INPLACE_H

#include "amq.h"
#include "amq/filter.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct amq_inplace amq_inplace;

/*
 * Opens path for in-place adds: applies (or discards, if torn) a journal
 * left by a crash, maps the file and returns in *f a writable view of it
 * (the header's checksum is verified, the payload's is not: only the
 * chunks a commit rewrites are read).  AMQ_EUNSUPPORTED when the kind or
 * the file (no chunked checksum) cannot be updated in place: the caller
 * then opens and saves the whole file.  AMQ_EIO when the file cannot be
 * opened or stat'ed; AMQ_EIO (AMQ_ENOMEM) when a journal beside it cannot
 * be read or applied (no memory for it): the journal is kept for a later
 * open.  Free *f before amq_inplace_close.
 */
AMQ_API int amq_inplace_open(const char *path, amq_filter **f, amq_inplace **ip,
                             amq_errinfo *err);

/*
 * Writes what the adds to f changed (dirty chunks and header) through the
 * journal into the file.  *bytes (may be NULL): bytes written to the file.
 * AMQ_EUNSUPPORTED when the changed pages cannot be found (no
 * /proc/self/pagemap): nothing was written; f can still be saved whole.
 * AMQ_EIO or AMQ_ENOSPC before the journal and its name are durable: the
 * file is unchanged and the journal removed; AMQ_EIO after: the journal is
 * kept and every open applies it.
 */
AMQ_API int amq_inplace_commit(amq_inplace *ip, const amq_filter *f, size_t *bytes,
                               amq_errinfo *err);

/* Applies (or removes, if torn) the journal a crash left beside path, so
 * that the file can be replaced whole: a writer about to rename a new file
 * over path calls it first.  AMQ_OK when there is none (or path is absent, or
 * no regular file); AMQ_EIO, AMQ_ENOMEM as amq_inplace_open (the journal kept). */
AMQ_API int amq_inplace_recover(const char *path, amq_errinfo *err);

/* Unmaps and closes (after amq_filter_free of the view).  NULL is a no-op. */
AMQ_API void amq_inplace_close(amq_inplace *ip);

/* Saves of f use the chunked payload checksum (header flag 1), which
 * in-place commits keep up to date.  AMQ_EINVAL on NULL. */
AMQ_API int amq_filter_set_chunked_checksum(amq_filter *f, int on);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_INPLACE_H */
