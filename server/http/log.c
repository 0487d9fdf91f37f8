/*
 * log.c - the access log (the daemon's logger is util/srv_log.c).
 *
 * Access-log lines are gathered per thread: each thread appends whole lines
 * to its own buffer (its own lock, uncontended but for the flusher) and
 * writes the buffer out when the next line would not fit, so the event
 * threads no longer take the log file's lock once per request.  A write is
 * at most PIPE_BUF bytes of whole lines: atomic on a pipe too, so lines of
 * different threads never interleave, and each thread's lines keep their
 * order.  strata_srv_access_log_flush() (main.c: every 50 ms, before a
 * reopen on SIGHUP, after HTTP has stopped) writes out what every thread
 * holds, so a line is never held for long and none is lost at shutdown.
 */
#include "request.h"
#include "url.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

static int access_fd = 2;

void strata_srv_access_log_open(int fd)
{
    access_fd = fd;
}

/* One thread's pending access-log lines (whole lines only). */
struct alog_buf {
    pthread_mutex_t mu;
    size_t len;
    struct alog_buf *next; /* every thread's buffer, for the flusher */
    char data[PIPE_BUF];
};

static pthread_mutex_t alog_list_mu = PTHREAD_MUTEX_INITIALIZER;
static struct alog_buf *alog_list;
static __thread struct alog_buf *alog_mine;

/* Under b->mu.  Whole lines, at most PIPE_BUF bytes: one atomic append. */
static void alog_write(struct alog_buf *b)
{
    size_t off = 0;
    while (off < b->len) {
        ssize_t w = write(access_fd, b->data + off, b->len - off);
        if (w <= 0)
            break; /* nowhere to report a failing log: the lines are dropped */
        off += (size_t)w;
    }
    b->len = 0;
}

static struct alog_buf *alog_buf_get(void)
{
    if (alog_mine)
        return alog_mine;
    struct alog_buf *b = malloc(sizeof(*b));
    if (!b)
        return NULL;
    pthread_mutex_init(&b->mu, NULL);
    b->len = 0;
    pthread_mutex_lock(&alog_list_mu);
    b->next = alog_list;
    alog_list = b;
    pthread_mutex_unlock(&alog_list_mu);
    /* Never freed: a buffer outlives its thread (MHD's threads end at
     * stop, before the last flush) and stays on the list. */
    alog_mine = b;
    return b;
}

/* Appends one whole line (n <= PIPE_BUF) to this thread's buffer. */
static void alog_append(const char *line, size_t n)
{
    struct alog_buf *b = alog_buf_get();
    if (!b) {
        ssize_t w = write(access_fd, line, n);
        (void)w;
        return;
    }
    pthread_mutex_lock(&b->mu);
    if (b->len + n > sizeof(b->data))
        alog_write(b);
    memcpy(b->data + b->len, line, n);
    b->len += n;
    pthread_mutex_unlock(&b->mu);
}

void strata_srv_access_log_flush(void)
{
    pthread_mutex_lock(&alog_list_mu);
    for (struct alog_buf *b = alog_list; b; b = b->next) {
        pthread_mutex_lock(&b->mu);
        if (b->len)
            alog_write(b);
        pthread_mutex_unlock(&b->mu);
    }
    pthread_mutex_unlock(&alog_list_mu);
}

static char term_flag(struct strata_req *r, int toe)
{
    switch (toe) {
    case MHD_REQUEST_TERMINATED_COMPLETED_OK:
        return r->term ? r->term : '-';
    case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED:
        return 'T';
    case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN:
        return 'S';
    case MHD_REQUEST_TERMINATED_WITH_ERROR:
        return r->term ? r->term : 'C';
    default:
        return 'C'; /* read error, client abort */
    }
}

/* The access log's time stamp: the formatted second is kept per thread,
 * only the milliseconds change within it. */
static void access_stamp(char out[32])
{
    static __thread time_t last_sec = -1;
    static __thread char last[24];
    static __thread size_t last_len;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_sec != last_sec) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        last_len = strftime(last, sizeof(last), "%Y-%m-%dT%H:%M:%S", &tm);
        last_sec = ts.tv_sec;
    }
    unsigned ms = (unsigned)(ts.tv_nsec / 1000000);
    memcpy(out, last, last_len);
    char *p = out + last_len;
    *p++ = '.';
    *p++ = (char)('0' + ms / 100);
    *p++ = (char)('0' + ms / 10 % 10);
    *p++ = (char)('0' + ms % 10);
    *p++ = 'Z';
    *p = '\0';
}

/* An access-log line under construction: snprintf's job without its
 * format parsing, which was most of the cost of a line.  len counts what
 * the whole line needs, as snprintf's return would; at most cap - 1 bytes
 * are stored. */
struct line_buf {
    char *p;
    size_t cap, len;
};

static void lb_put(struct line_buf *b, const char *s, size_t n)
{
    if (b->len < b->cap - 1) {
        size_t room = b->cap - 1 - b->len;
        memcpy(b->p + b->len, s, n < room ? n : room);
    }
    b->len += n;
}

static void lb_str(struct line_buf *b, const char *s)
{
    lb_put(b, s, strlen(s));
}

static void lb_chr(struct line_buf *b, char c)
{
    lb_put(b, &c, 1);
}

static void lb_u64(struct line_buf *b, unsigned long long v)
{
    char d[24];
    size_t i = sizeof(d);
    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    lb_put(b, d + i, sizeof(d) - i);
}

void strata_srv_access_log(struct strata_req *r, int toe)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    char t[32], line[4000];
    access_stamp(t);
    /* Keys may hold spaces, quotes and newlines: log them URL-encoded so a
     * line stays one line with space-separated fields (an over-long key,
     * refused KeyTooLongError, is logged cut at STRATA_KEY_MAX bytes). */
    char key[3 * STRATA_KEY_MAX + 1];
    long klen = 0;
    if (r->key) {
        size_t kn = strnlen(r->key, STRATA_KEY_MAX);
        klen = strata_url_encode(r->key, kn, key, sizeof(key) - 1, true);
    }
    key[klen > 0 ? klen : 0] = '\0';
    uint64_t us = (now - r->t0_ns) / 1000; /* duration in ms with 3 decimals */
    /* "%s %s %s %s %s %s %d %s %llu %llu %llu.%03u %c\n" */
    struct line_buf b = {line, sizeof(line), 0};
    lb_str(&b, t);
    lb_chr(&b, ' ');
    lb_str(&b, r->id);
    lb_chr(&b, ' ');
    lb_str(&b, r->method ? r->method : "-");
    lb_chr(&b, ' ');
    lb_str(&b, r->bucket ? r->bucket : "-");
    lb_chr(&b, ' ');
    lb_str(&b, klen > 0 ? key : "-");
    lb_chr(&b, ' ');
    lb_str(&b, r->auth.cred ? r->auth.cred->access_key : "-");
    lb_chr(&b, ' ');
    if (r->status < 0)
        lb_chr(&b, '-');
    lb_u64(&b,
           r->status < 0 ? 0ull - (unsigned long long)r->status : (unsigned long long)r->status);
    lb_chr(&b, ' ');
    lb_str(&b, r->sent_err ? strata_s3_err_code(r->sent_err) : "-");
    lb_chr(&b, ' ');
    lb_u64(&b, (unsigned long long)r->bytes_in);
    lb_chr(&b, ' ');
    lb_u64(&b, (unsigned long long)r->bytes_out);
    lb_chr(&b, ' ');
    lb_u64(&b, (unsigned long long)(us / 1000));
    char frac[5] = {'.', (char)('0' + us % 1000 / 100), (char)('0' + us % 100 / 10),
                    (char)('0' + us % 10), ' '};
    lb_put(&b, frac, sizeof(frac));
    lb_chr(&b, term_flag(r, toe));
    lb_chr(&b, '\n');
    size_t n = b.len;
    if (n >= sizeof(line)) {
        n = sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    alog_append(line, n);
}
