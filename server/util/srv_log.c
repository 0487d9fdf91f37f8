/*
 * srv_log.c - the daemon's logger.  Every message goes through
 * strata_srv_log() (nothing else in server/ writes to stderr), and library
 * modules log through the sink strata_srv_logger() returns.  Each line is
 * one write(2), so lines from concurrent threads never interleave.  Any
 * thread.
 */
#include "srv_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int log_level = STRATA_LOG_INFO;

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
