/*
 * notify_postgres.c - the PostgreSQL target: ADDRESS is
 * postgres://[USER@]HOST:PORT/DBNAME/TABLE (TCP; names of letters, digits
 * and _).  MinIO's "access" format: one row per event, appended,
 * in TABLE (event_time TIMESTAMP WITH TIME ZONE NOT NULL, event_data
 * JSONB), created if missing.  event_time is the record's eventTime (an
 * s3:TestEvent's Time).  An INSERT counts as
 * delivered when it has committed; the queued events are inserted in
 * batches, one transaction each.  The password is the
 * target's token file.  libpq; the connection is made again after any
 * error.  Delivery thread only.
 */
#include "notify_addr.h"
#include "notify_session.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

struct ptarget {
    struct strata_notify_session s; /* password: the database user's */
    PGconn *c;
    char *insert; /* the INSERT statement, TABLE quoted */
    char *create; /* CREATE TABLE IF NOT EXISTS */
    struct strata_notify_addr a;
    char *dbname, *table; /* into a.path */
    char port[8];
};

static void pt_fini(void *h)
{
    struct ptarget *t = h;
    free(t->insert);
    free(t->create);
}

/* A plain identifier: [A-Za-z_][A-Za-z0-9_]{0,62}, the name PostgreSQL keeps. */
static bool ident_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= 63 && !(s[0] >= '0' && s[0] <= '9') &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == n;
}

static int pt_setup(void *h, const char *address)
{
    struct ptarget *t = h;
    if (strata_notify_addr_parse(address, "postgres", &t->a) != 0 ||
        !(t->table = strata_notify_addr_split(&t->a)) || !ident_ok(t->a.path) ||
        !ident_ok(t->table))
        return STRATA_NOTIFY_BAD_ADDRESS;
    t->dbname = t->a.path;
    snprintf(t->port, sizeof(t->port), "%d", t->a.port);
    /* The identifier is checked above; quoted all the same so that its
     * case is kept, as it was written. */
    if (asprintf(&t->insert, "INSERT INTO \"%s\" (event_time, event_data) SELECT "
                             "COALESCE(($1::jsonb #>> '{Records,0,eventTime}')::timestamptz, "
                             "($1::jsonb ->> 'Time')::timestamptz, now()), $1::jsonb",
                 t->table) < 0 ||
        asprintf(&t->create, "CREATE TABLE IF NOT EXISTS \"%s\" (event_time TIMESTAMP WITH TIME "
                             "ZONE NOT NULL, event_data JSONB)", t->table) < 0)
        return STRATA_NOTIFY_NO_CLIENT;
    return 0;
}

static bool exec_ok(PGconn *c, const char *sql, const char *param)
{
    PGresult *r = PQexecParams(c, sql, param ? 1 : 0, NULL, param ? &param : NULL, NULL, NULL, 0);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok;
}

static void pt_disconnect(void *h)
{
    struct ptarget *t = h;
    PQfinish(t->c); /* rolls back what is open */
    t->c = NULL;
}

static bool pt_connect(void *h)
{
    struct ptarget *t = h;
    const char *keys[] = {"host", "port", "dbname", "user", "password", "connect_timeout",
                          "application_name", NULL};
    /* NULL values end the list early: a missing user or password is passed as "". */
    const char *vals[] = {t->a.host, t->port, t->dbname, t->a.user,
                          t->s.password ? t->s.password : "", "2", "strata-notify", NULL};
    t->c = PQconnectdbParams(keys, vals, 0);
    if (PQstatus(t->c) == CONNECTION_OK && exec_ok(t->c, t->create, NULL))
        return true;
    pt_disconnect(t);
    return false;
}

static bool pt_alive(void *h)
{
    return PQstatus(((struct ptarget *)h)->c) == CONNECTION_OK;
}

/* One transaction for the batch: one commit (one WAL flush) for all. */
static size_t pt_send_batch(void *h, const struct iovec *msgs, size_t n)
{
    struct ptarget *t = h;
    if (!strata_notify_session_ready(h))
        return 0;
    bool ok = n == 1 || exec_ok(t->c, "BEGIN", NULL);
    /* The JSON has no NUL: each is sent as a text parameter. */
    for (size_t i = 0; ok && i < n; i++)
        ok = exec_ok(t->c, t->insert, msgs[i].iov_base);
    if (ok && n > 1)
        ok = exec_ok(t->c, "COMMIT", NULL);
    if (!ok) {
        strata_notify_session_drop(h); /* the next attempt connects again */
        return 0;
    }
    return n;
}

static const struct strata_notify_session_kind postgres_session = {
    sizeof(struct ptarget),
    "postgres://[USER@]HOST:PORT/DBNAME/TABLE (names of letters, digits and _)",
    NULL, NULL, pt_setup, pt_connect, pt_alive, pt_disconnect, pt_fini};

const struct strata_notify_kind strata_notify_postgres = {
    "postgres", strata_notify_session_open, NULL, strata_notify_session_close, pt_send_batch,
    &postgres_session};
