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
#include "secret.h"
#include "notify_internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

struct ptarget {
    PGconn *c;
    char *insert; /* the INSERT statement, TABLE quoted */
    char *create; /* CREATE TABLE IF NOT EXISTS */
    struct strata_notify_addr a;
    char *dbname, *table; /* into a.path */
    char port[8];
    char *password;
};

static void pt_close(void *h)
{
    struct ptarget *t = h;
    if (!t)
        return;
    if (t->c)
        PQfinish(t->c);
    strata_secret_str_free(t->password);
    free(t->insert);
    free(t->create);
    free(t);
}

/* A plain identifier: [A-Za-z_][A-Za-z0-9_]{0,62}, the name PostgreSQL keeps. */
static bool ident_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= 63 && !(s[0] >= '0' && s[0] <= '9') &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == n;
}

static int pt_open(const char *address, const char *token, void **h, char *err, size_t err_len)
{
    struct ptarget *t = calloc(1, sizeof(*t));
    if (!t || strata_notify_addr_parse(address, "postgres", &t->a) != 0 ||
        !(t->table = strata_notify_addr_split(&t->a)) || !ident_ok(t->a.path) ||
        !ident_ok(t->table)) {
        free(t);
        snprintf(err, err_len, "postgres address %s: want postgres://[USER@]HOST:PORT/DBNAME/"
                               "TABLE (names of letters, digits and _)", address);
        return -1;
    }
    t->dbname = t->a.path;
    snprintf(t->port, sizeof(t->port), "%d", t->a.port);
    /* The identifier is checked above; quoted all the same so that its
     * case is kept, as it was written. */
    if (asprintf(&t->insert, "INSERT INTO \"%s\" (event_time, event_data) SELECT "
                             "COALESCE(($1::jsonb #>> '{Records,0,eventTime}')::timestamptz, "
                             "($1::jsonb ->> 'Time')::timestamptz, now()), $1::jsonb",
                 t->table) < 0 ||
        asprintf(&t->create, "CREATE TABLE IF NOT EXISTS \"%s\" (event_time TIMESTAMP WITH TIME "
                             "ZONE NOT NULL, event_data JSONB)", t->table) < 0 ||
        strata_notify_secret_dup(token, &t->password) != 0) {
        pt_close(t);
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    *h = t;
    return 0; /* connected on first use: a server down at start is retried */
}

static bool exec_ok(PGconn *c, const char *sql, const char *param)
{
    PGresult *r = PQexecParams(c, sql, param ? 1 : 0, NULL, param ? &param : NULL, NULL, NULL, 0);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok;
}

static bool pt_connect(struct ptarget *t)
{
    if (t->c && PQstatus(t->c) == CONNECTION_OK)
        return true;
    if (t->c)
        PQfinish(t->c);
    const char *keys[] = {"host", "port", "dbname", "user", "password", "connect_timeout",
                          "application_name", NULL};
    const char *vals[] = {t->a.host, t->port, t->dbname, t->a.user[0] ? t->a.user : NULL,
                          t->password, "2", "strata-notify", NULL};
    /* NULL values end the list early: a missing user is passed as "". */
    if (!vals[3])
        vals[3] = "";
    if (!vals[4])
        vals[4] = "";
    t->c = PQconnectdbParams(keys, vals, 0);
    if (PQstatus(t->c) != CONNECTION_OK || !exec_ok(t->c, t->create, NULL)) {
        PQfinish(t->c);
        t->c = NULL;
        return false;
    }
    return true;
}

/* One transaction for the batch: one commit (one WAL flush) for all. */
static size_t pt_send_batch(void *h, const struct iovec *msgs, size_t n)
{
    struct ptarget *t = h;
    if (!pt_connect(t))
        return 0;
    bool ok = n == 1 || exec_ok(t->c, "BEGIN", NULL);
    /* The JSON has no NUL: each is sent as a text parameter. */
    for (size_t i = 0; ok && i < n; i++)
        ok = exec_ok(t->c, t->insert, msgs[i].iov_base);
    if (ok && n > 1)
        ok = exec_ok(t->c, "COMMIT", NULL);
    if (!ok) {
        PQfinish(t->c); /* rolls back; the next attempt connects again */
        t->c = NULL;
        return 0;
    }
    return n;
}

const struct strata_notify_kind strata_notify_postgres = {"postgres", pt_open, NULL, pt_close,
                                                          pt_send_batch};
