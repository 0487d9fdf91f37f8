/*
 * log.h - the log sink that library modules (erasure/, meta/, ilm/) write
 * through.  Libraries never print: the daemon injects a sink at init.  The
 * macro checks the level before it evaluates its arguments.
 */
#ifndef STRATA_LOG_H
#define STRATA_LOG_H

#include <stdarg.h>
#include <stdio.h>

enum strata_log_level {
    STRATA_LOG_ERR = 0,
    STRATA_LOG_WARN,
    STRATA_LOG_NOTICE,
    STRATA_LOG_INFO,
    STRATA_LOG_DEBUG,
};

typedef void (*strata_log_cb)(int level, const char *module, const char *msg, void *ud);

/* Embedded by value in module options; a zeroed logger drops everything. */
struct strata_logger {
    strata_log_cb cb;
    void *ud;
    int level; /* messages above this level are dropped */
};

__attribute__((format(printf, 4, 5))) static inline void
strata__log_emit(const struct strata_logger *lg, int level, const char *module, const char *fmt,
                 ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    lg->cb(level, module, line, lg->ud);
}

#define strata_log(lg, lvl, module, ...)                                        \
    do {                                                                        \
        const struct strata_logger *lg_ = (lg);                                 \
        if (lg_ && lg_->cb && (lvl) <= lg_->level)                              \
            strata__log_emit(lg_, (lvl), (module), __VA_ARGS__);                \
    } while (0)

#endif /* STRATA_LOG_H */
