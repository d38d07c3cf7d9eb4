/*
 * redis-fanout: Redis pub/sub fan-out throughput, the baseline for FlowSync's fan-out
 * figure (Benchmarks/compare-redis.sh, docs/BENCHMARKS.md).
 *
 *   redis-fanout HOST PORT SUBSCRIBERS PAYLOAD_BYTES WARMUP_S DURATION_S [REDIS_PID]
 *
 * One process, two sides:
 * - SUBSCRIBERS connections SUBSCRIBE to one channel. They are read with epoll into a
 *   256 KiB buffer and only *counted* (bytes / exact size of one delivered message),
 *   never parsed: the reading side must be much cheaper than Redis's sending side, or
 *   the figure would measure this client instead of Redis.
 * - one publisher connection pipelines PUBLISH commands (64 per write, at most 4,096
 *   unanswered), the way a busy producer would.
 * Prints: messages delivered per second over the measured window (summed over
 * subscribers), messages published per second, and the CPU use (percent of one core)
 * of this client and, given its pid, of redis-server over the window — a client near
 * 100 % would mean the figure is the client's, not Redis's.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int connect_to(const char *host, int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) { perror("socket"); exit(2); }
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) { perror("connect"); exit(2); }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) { if (errno == EINTR) continue; perror("write"); exit(2); }
        p += w; n -= (size_t)w;
    }
}

static double self_cpu(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

/* utime + stime of a process, in seconds (-1 when unreadable). */
static double process_cpu(const char *pid) {
    if (!pid) return -1;
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *p = strrchr(text, ')');
    if (!p) return -1;
    unsigned long utime = 0, stime = 0;
    /* After ") ": state(3) ... utime is field 14, stime 15. */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

int main(int argc, char **argv) {
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: %s HOST PORT SUBSCRIBERS PAYLOAD_BYTES WARMUP_S DURATION_S [REDIS_PID]\n", argv[0]);
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]), subscribers = atoi(argv[3]), payload = atoi(argv[4]);
    double warmup = atof(argv[5]), duration = atof(argv[6]);
    const char *redis_pid = argc == 8 ? argv[7] : NULL;
    double client_cpu0 = 0, client_cpu1 = 0, redis_cpu0 = -1, redis_cpu1 = -1;
    const char *channel = "fanout";
    char payload_len[16];
    snprintf(payload_len, sizeof payload_len, "%d", payload);
    /* One delivered message: *3 $7 message $6 fanout $N payload. */
    size_t message_bytes = strlen("*3\r\n$7\r\nmessage\r\n") + strlen("$6\r\n") + strlen(channel) + 2
        + 1 + strlen(payload_len) + 2 + (size_t)payload + 2;
    const char *confirm_tail = ":1\r\n";   /* end of the subscribe confirmation */

    int *fds = calloc((size_t)subscribers, sizeof(int));
    int ep = epoll_create1(0);
    const char *sub = "*2\r\n$9\r\nSUBSCRIBE\r\n$6\r\nfanout\r\n";
    for (int i = 0; i < subscribers; i++) {
        fds[i] = connect_to(host, port);
        write_all(fds[i], sub, strlen(sub));
    }
    /* Wait for every confirmation (read blocking, one by one). */
    for (int i = 0; i < subscribers; i++) {
        char buf[256];
        size_t got = 0;
        while (got < 4 || memcmp(buf + got - 4, confirm_tail, 4) != 0) {
            ssize_t r = read(fds[i], buf + got, sizeof buf - got);
            if (r <= 0) { fprintf(stderr, "subscriber %d: no confirmation\n", i); return 2; }
            got += (size_t)r;
        }
        fcntl(fds[i], F_SETFL, O_NONBLOCK);
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
        epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
    }

    /* The publisher: a pipelined batch of 64 PUBLISH commands per write. */
    int pub = connect_to(host, port);
    fcntl(pub, F_SETFL, O_NONBLOCK);
    char *body = malloc((size_t)payload);
    for (int i = 0; i < payload; i++) body[i] = "abcdefghijklmnopqrstuvwxyz"[(i * 7 + 3) % 26];
    char head[128];
    int head_len = snprintf(head, sizeof head, "*3\r\n$7\r\nPUBLISH\r\n$6\r\nfanout\r\n$%d\r\n", payload);
    size_t command_bytes = (size_t)head_len + (size_t)payload + 2;
    const int batch = 64, window = 4096;
    char *commands = malloc(command_bytes * batch);
    for (int k = 0; k < batch; k++) {
        char *p = commands + command_bytes * k;
        memcpy(p, head, (size_t)head_len);
        memcpy(p + head_len, body, (size_t)payload);
        memcpy(p + head_len + payload, "\r\n", 2);
    }
    struct epoll_event pev = { .events = EPOLLIN | EPOLLOUT, .data.u32 = 0xFFFFFFFFu };
    epoll_ctl(ep, EPOLL_CTL_ADD, pub, &pev);

    size_t pending_out = 0, out_off = 0;   /* bytes of the current batch left to write */
    long long published = 0, answered = 0, published_window = 0;
    unsigned long long received = 0, received_window_start = 0, received_window_end = 0;
    double start = now(), t0 = start + warmup, t1 = t0 + duration;
    int in_window = 0, done = 0;
    static char buf[256 * 1024];
    struct epoll_event events[256];
    long long published_at_t0 = 0;
    while (!done) {
        int n = epoll_wait(ep, events, 256, 10);
        double t = now();
        if (!in_window && t >= t0) {
            in_window = 1; received_window_start = received; published_at_t0 = answered;
            client_cpu0 = self_cpu(); redis_cpu0 = process_cpu(redis_pid);
        }
        if (in_window && t >= t1) {
            received_window_end = received; published_window = answered - published_at_t0; done = 1;
            client_cpu1 = self_cpu(); redis_cpu1 = process_cpu(redis_pid);
            break;
        }
        for (int e = 0; e < n; e++) {
            uint32_t id = events[e].data.u32;
            if (id == 0xFFFFFFFFu) {
                if (events[e].events & EPOLLIN) {
                    for (;;) {
                        ssize_t r = read(pub, buf, sizeof buf);
                        if (r <= 0) break;
                        for (ssize_t k = 0; k < r; k++) if (buf[k] == '\n') answered++;
                    }
                }
                /* Write while the window allows. */
                while (published - answered < window) {
                    if (pending_out == 0) { pending_out = command_bytes * batch; out_off = 0; }
                    ssize_t w = write(pub, commands + out_off, pending_out);
                    if (w <= 0) break;
                    out_off += (size_t)w;
                    pending_out -= (size_t)w;
                    if (pending_out == 0) published += batch;
                }
            } else {
                for (;;) {
                    ssize_t r = read(fds[id], buf, sizeof buf);
                    if (r <= 0) break;
                    received += (unsigned long long)r;
                    if (r < (ssize_t)sizeof buf) break;
                }
            }
        }
    }
    double delivered = (double)(received_window_end - received_window_start) / (double)message_bytes / duration;
    printf("subscribers %d\npayload_bytes %d\nmessage_bytes %zu\nmeasured_seconds %.1f\npublished_per_second %.0f\ndelivered_per_second %.0f\n",
           subscribers, payload, message_bytes, duration, (double)published_window / duration, delivered);
    printf("client_cpu_percent %.0f\n", (client_cpu1 - client_cpu0) / duration * 100);
    if (redis_cpu0 >= 0 && redis_cpu1 >= 0) printf("redis_cpu_percent %.0f\n", (redis_cpu1 - redis_cpu0) / duration * 100);
    return 0;
}
