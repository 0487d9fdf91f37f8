/*
 * srv_log.h - the daemon's logger (srv_log.c): levels are STRATA_LOG_*
 * (strata/log.h).  Any thread.
 */
#ifndef STRATA_SERVER_SRV_LOG_H
#define STRATA_SERVER_SRV_LOG_H

#include "strata/log.h"

__attribute__((format(printf, 2, 3))) void strata_srv_log(int level, const char *fmt, ...);
void strata_srv_log_set_level(int level);
/* The sink handed to erasure/ and meta/. */
struct strata_logger strata_srv_logger(void);

#endif /* STRATA_SERVER_SRV_LOG_H */
