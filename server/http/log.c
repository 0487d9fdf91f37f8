/*
 * log.c - the daemon's logger and the access log.  Every message goes
 * through strata_srv_log() (nothing else in server/ writes to stderr), and
 * library modules log through the sink strata_srv_logger() returns.  Each
 * line is one write(2), so lines from concurrent connection threads never
 * interleave.  Any thread.
 */
#include "srv.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int log_level = STRATA_LOG_INFO;
static int access_fd = 2;

static const char *level_name(int level)
{
    static const char *const names[] = {"ERR", "WARN", "NOTICE", "INFO", "DEBUG"};
    return level >= 0 && level <= STRATA_LOG_DEBUG ? names[level] : "?";
}

static void stamp(char *out, size_t len)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char base[32];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, len, "%s.%03dZ", base, (int)(tv.tv_usec / 1000));
}

static void emit(int level, const char *module, const char *msg)
{
    char ts[40], line[1200];
    stamp(ts, sizeof(ts));
    int n = snprintf(line, sizeof(line), "%s %s %s: %s\n", ts, level_name(level), module, msg);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line)) {
        n = (int)sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    ssize_t w = write(2, line, (size_t)n);
    (void)w; /* nowhere left to report a failing stderr */
}

void strata_srv_log_set_level(int level)
{
    log_level = level;
}

void strata_srv_log(int level, const char *fmt, ...)
{
    if (level > log_level)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    emit(level, "server", msg);
}

static void lib_log_cb(int level, const char *module, const char *msg, void *ud)
{
    emit(level, module ? module : "lib", msg);
}

struct strata_logger strata_srv_logger(void)
{
    struct strata_logger lg = {.cb = lib_log_cb, .ud = NULL, .level = log_level};
    return lg;
}

void strata_srv_access_log_open(int fd)
{
    access_fd = fd;
}

static char term_flag(struct strata_req *r, enum MHD_RequestTerminationCode toe)
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

void strata_srv_access_log(struct strata_req *r, enum MHD_RequestTerminationCode toe)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    char t[40], line[4000];
    stamp(t, sizeof(t));
    /* Keys may hold spaces, quotes and newlines: log them URL-encoded so a
     * line stays one line with space-separated fields. */
    struct strata_sbuf key;
    strata_sbuf_init(&key, 3 * STRATA_KEY_MAX + 1);
    if (r->key)
        strata_url_encode_sbuf(&key, r->key, true);
    int n = snprintf(line, sizeof(line),
                     "%s %s %s %s %s %s %d %s %llu %llu %.3f %c\n", t, r->id,
                     r->method ? r->method : "-", r->bucket ? r->bucket : "-",
                     key.len ? key.data : "-",
                     r->auth.cred ? r->auth.cred->access_key : "-", r->status,
                     r->sent_err ? strata_s3_err_code(r->sent_err) : "-",
                     (unsigned long long)r->bytes_in, (unsigned long long)r->bytes_out,
                     (double)(now - r->t0_ns) / 1e6, term_flag(r, toe));
    strata_sbuf_fini(&key);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line)) {
        n = (int)sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    ssize_t w = write(access_fd, line, (size_t)n);
    (void)w;
}
