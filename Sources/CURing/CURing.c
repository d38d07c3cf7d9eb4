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
