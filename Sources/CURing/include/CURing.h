// liburing (Debian's liburing-dev) behind an opaque pointer: the daemon's io_uring write
// path (`[server] write_path`, FlowSyncServer's `SendRing`) and the write-path experiment
// of flowsync-server-bench (--write-baseline, issue #20); docs/BENCHMARKS.md, "Write
// calls: libuv vs io_uring".
//
// Opaque, so that no liburing type reaches Swift: liburing ships its own copy of
// <linux/io_uring.h>, which clashes with the kernel header Glibc's module already has.
#ifndef FLOWSYNC_CURING_H
#define FLOWSYNC_CURING_H

#include <stdint.h>

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

// MARK: The gathered send ring (the daemon's write path)
//
// A send ring owns, beside the io_uring, a pool of iovecs and msghdrs for one
// submission: buffers are added one by one (`add_buffer`), then `queue_sendv` queues
// one send of every buffer added since the previous send, on one socket, tagged. Every
// send carries MSG_DONTWAIT (a full socket completes with -EAGAIN at once instead of
// waiting inside the ring, so the submission never blocks the loop) and MSG_NOSIGNAL
// (a closed peer is -EPIPE, not SIGPIPE). The bytes themselves are the caller's: they
// must stay valid until `submit_and_collect` returned.

/// A send ring of `entries` sends and `buffers` iovecs per submission, or NULL with
/// `*error` set (a negative errno).
void *flowsync_send_ring_create(unsigned entries, unsigned buffers, int *error);
/// Frees a send ring (nothing may be queued: `submit_and_collect` first).
void flowsync_send_ring_destroy(void *ring);
/// Sends that still fit in this submission.
unsigned flowsync_send_ring_free_sends(void *ring);
/// Buffers that still fit in this submission.
unsigned flowsync_send_ring_free_buffers(void *ring);
/// Adds one buffer to the next send; 0, or -EBUSY when the pool is full.
int flowsync_send_ring_add_buffer(void *ring, const void *base, unsigned long len);
/// Queues one send on `fd` of the buffers added since the previous send (a plain
/// IORING_OP_SEND for one buffer, IORING_OP_SENDMSG for several); its completion
/// carries `tag`. 0, -EBUSY when no entry is free, -EINVAL when no buffer was added.
int flowsync_send_ring_queue(void *ring, int fd, uint64_t tag);
/// Submits every queued send and waits until every one has completed, writing each
/// completion's tag and result (bytes sent, or a negative errno) to `tags` and
/// `results` (room for as many as were queued). Returns the number of completions, or
/// a negative errno when the ring itself failed; then sends may still be in flight and
/// the caller must treat the buffers as borrowed forever (the daemon traps).
int flowsync_send_ring_submit_and_collect(void *ring, uint64_t *tags, int32_t *results);

#endif
