// liburing (Debian's liburing-dev) behind an opaque pointer, for the write-path
// experiment of flowsync-server-bench (--write-baseline, issue #20). Not used by the
// daemon: the measured result decides (docs/BENCHMARKS.md, "Write calls: libuv vs
// io_uring").
//
// Opaque, so that no liburing type reaches Swift: liburing ships its own copy of
// <linux/io_uring.h>, which clashes with the kernel header Glibc's module already has.
#ifndef FLOWSYNC_CURING_H
#define FLOWSYNC_CURING_H

/// A ring of at least `entries` submission entries, or NULL with `*error` set (a
/// negative errno: the kernel may lack io_uring or forbid it).
void *flowsync_uring_create(unsigned entries, int *error);
/// Frees a ring.
void flowsync_uring_destroy(void *ring);
/// Queues one send of `len` bytes at `buf` on `fd`; 0, or -EBUSY when full.
int flowsync_uring_queue_send(void *ring, int fd, const void *buf, unsigned len);
/// Submits what is queued, waits for `count` completions and consumes them. Returns
/// how many completions were not `expected` bytes (short or failed), or a negative errno.
int flowsync_uring_submit_and_reap(void *ring, unsigned count, int expected);

#endif
