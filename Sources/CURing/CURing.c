#include "CURing.h"
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>

void *flowsync_uring_create(unsigned entries, int *error) {
    struct io_uring *ring = malloc(sizeof(struct io_uring));
    if (!ring) { *error = -ENOMEM; return NULL; }
    int rc = io_uring_queue_init(entries, ring, 0);
    if (rc < 0) { free(ring); *error = rc; return NULL; }
    *error = 0;
    return ring;
}

void flowsync_uring_destroy(void *ring) {
    io_uring_queue_exit(ring);
    free(ring);
}

int flowsync_uring_queue_send(void *ring, int fd, const void *buf, unsigned len) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe) return -EBUSY;
    io_uring_prep_send(sqe, fd, buf, len, 0);
    return 0;
}

int flowsync_uring_submit_and_reap(void *ring, unsigned count, int expected) {
    int submitted = io_uring_submit_and_wait(ring, count);
    if (submitted < 0) return submitted;
    unsigned reaped = 0;
    int bad = 0;
    while (reaped < count) {
        struct io_uring_cqe *cqe;
        int rc = io_uring_wait_cqe(ring, &cqe);
        if (rc < 0) return rc;
        unsigned head;
        unsigned seen = 0;
        io_uring_for_each_cqe((struct io_uring *)ring, head, cqe) {
            if (cqe->res != expected) bad += 1;
            seen += 1;
        }
        io_uring_cq_advance(ring, seen);
        reaped += seen;
    }
    return bad;
}

// MARK: The gathered send ring

#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

struct flowsync_send_ring {
    struct io_uring ring;
    unsigned entries;       // sends per submission
    unsigned buffers;       // iovecs per submission
    struct msghdr *messages;
    struct iovec *iovecs;
    unsigned queued;        // sends queued, not yet submitted
    unsigned used;          // iovecs used by queued sends and the open one
    unsigned open_start;    // first iovec of the send being built
};

void *flowsync_send_ring_create(unsigned entries, unsigned buffers, int *error) {
    struct flowsync_send_ring *r = calloc(1, sizeof *r);
    if (!r) { *error = -ENOMEM; return NULL; }
    r->messages = calloc(entries, sizeof *r->messages);
    r->iovecs = calloc(buffers, sizeof *r->iovecs);
    if (!r->messages || !r->iovecs) {
        free(r->messages); free(r->iovecs); free(r);
        *error = -ENOMEM;
        return NULL;
    }
    // SUBMIT_ALL: one bad entry (a closed fd) must not stop the rest of the batch at
    // submission, or the wait below would wait for sends never submitted. COOP_TASKRUN:
    // the loop thread reaps every completion itself, so no interrupt is needed to run
    // completion work. Older kernels refuse unknown flags with -EINVAL: retry plainer.
    unsigned flags[] = { IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN, IORING_SETUP_SUBMIT_ALL, 0 };
    int rc = -EINVAL;
    for (unsigned i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        rc = io_uring_queue_init(entries, &r->ring, flags[i]);
        if (rc != -EINVAL) break;
    }
    if (rc < 0) {
        free(r->messages); free(r->iovecs); free(r);
        *error = rc;
        return NULL;
    }
    r->entries = entries;
    r->buffers = buffers;
    *error = 0;
    return r;
}

void flowsync_send_ring_destroy(void *ring) {
    struct flowsync_send_ring *r = ring;
    io_uring_queue_exit(&r->ring);
    free(r->messages);
    free(r->iovecs);
    free(r);
}

unsigned flowsync_send_ring_free_sends(void *ring) {
    struct flowsync_send_ring *r = ring;
    return r->entries - r->queued;
}

unsigned flowsync_send_ring_free_buffers(void *ring) {
    struct flowsync_send_ring *r = ring;
    return r->buffers - r->used;
}

int flowsync_send_ring_add_buffer(void *ring, const void *base, unsigned long len) {
    struct flowsync_send_ring *r = ring;
    if (r->used == r->buffers) return -EBUSY;
    r->iovecs[r->used].iov_base = (void *)base;
    r->iovecs[r->used].iov_len = len;
    r->used += 1;
    return 0;
}

int flowsync_send_ring_queue(void *ring, int fd, uint64_t tag) {
    struct flowsync_send_ring *r = ring;
    unsigned count = r->used - r->open_start;
    if (count == 0) return -EINVAL;
    if (r->queued == r->entries) return -EBUSY;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
    if (!sqe) return -EBUSY;
    const int flags = MSG_DONTWAIT | MSG_NOSIGNAL;
    struct iovec *first = &r->iovecs[r->open_start];
    if (count == 1) {
        io_uring_prep_send(sqe, fd, first->iov_base, first->iov_len, flags);
    } else {
        // The msghdr and its iovecs live in the ring's pools until the completion is
        // collected (the kernel may read them at issue time, not at prep).
        struct msghdr *message = &r->messages[r->queued];
        memset(message, 0, sizeof *message);
        message->msg_iov = first;
        message->msg_iovlen = count;
        io_uring_prep_sendmsg(sqe, fd, message, flags);
    }
    sqe->user_data = tag;
    r->queued += 1;
    r->open_start = r->used;
    return 0;
}

int flowsync_send_ring_submit_and_collect(void *ring, uint64_t *tags, int32_t *results) {
    struct flowsync_send_ring *r = ring;
    unsigned count = r->queued;
    unsigned collected = 0;
    while (collected < count) {
        // Submits whatever is still unsubmitted and waits for the rest. With
        // MSG_DONTWAIT every send completes during submission (sent, short or
        // -EAGAIN), so this wait does not sleep on a socket.
        int rc = io_uring_submit_and_wait(&r->ring, count - collected);
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) return rc;
        unsigned head;
        unsigned seen = 0;
        struct io_uring_cqe *cqe;
        io_uring_for_each_cqe(&r->ring, head, cqe) {
            if (collected + seen == count) break;
            tags[collected + seen] = cqe->user_data;
            results[collected + seen] = cqe->res;
            seen += 1;
        }
        io_uring_cq_advance(&r->ring, seen);
        collected += seen;
    }
    r->queued = 0;
    r->used = 0;
    r->open_start = 0;
    return (int)collected;
}
