/*
 * admin_internal.h - shared by the files of server/admin/: the endpoint
 * handlers and the JSON answer helpers.
 */
#ifndef STRATA_SERVER_ADMIN_ADMIN_INTERNAL_H
#define STRATA_SERVER_ADMIN_ADMIN_INTERNAL_H

#include <jansson.h>

#include "admin.h"

/* Answers doc (a reference is taken over) with status. */
void strata_admin__send_json(struct strata_req *r, int status, json_t *doc);
/* A JSON error with our own code (NotFound, HealInProgress, ...). */
void strata_admin__error(struct strata_req *r, int status, const char *code, const char *msg);

/* Handlers.  arg is the path after the endpoint name and its '/', or NULL. */
void strata_admin__info(struct strata_req *r, const char *arg);
void strata_admin__usage(struct strata_req *r, const char *arg);
void strata_admin__heal_start(struct strata_req *r, const char *arg);
void strata_admin__heal_status(struct strata_req *r, const char *arg);
void strata_admin__audit_verify(struct strata_req *r, const char *arg);
void strata_admin__audit_tail(struct strata_req *r, const char *arg);
void strata_admin__ilm_run(struct strata_req *r, const char *arg);
void strata_admin__ilm_status(struct strata_req *r, const char *arg);
void strata_admin__users(struct strata_req *r, const char *arg);
void strata_admin__replicate(struct strata_req *r, const char *arg);
void strata_admin__replication_status(struct strata_req *r, const char *arg);

/* The root user, or a key named in --admin-users. */
bool strata_admin__is_admin(const struct strata_srv_config *cfg, const char *ak);

/* Seconds since the daemon started. */
double strata_admin__uptime_s(void);
/* Wait for a running heal (daemon stop). */
void strata_admin__heal_join(void);
/* The heal state as Prometheus text (admin_metrics.c). */
void strata_admin__heal_metrics(struct strata_sbuf *b);

#endif /* STRATA_SERVER_ADMIN_ADMIN_INTERNAL_H */
