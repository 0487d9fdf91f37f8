/*
 * audit.c - the object-lock audit log: append-only, hash-chained entries.
 * This file makes and checks the entries and their chain; where the copies
 * live and how they become durable is the store's (store.h: audit_*;
 * locally one copy per drive, DRIVE/audit.log, local/audit_files.c).
 *
 * Entry format (one line per entry, JSON, fields in this order):
 *   {"seq":N,"time":"<ISO 8601 of the lock clock>","lock_ms":L,"wall_ms":W,
 *    "user":..,"bucket":..,["key":..|"key_hex":..,]["version_id":..,]
 *    "action":..,"outcome":..,["detail":..,]"prev":"<64 hex>","hash":"<64 hex>"}\n
 * "hash" is the SHA-256 of the line's bytes before ',"hash"'; those bytes
 * include "prev", the previous entry's "hash" on the same drive (64 zeros for
 * the first entry), so changing, removing or reordering any entry breaks the
 * chain at that entry.  "seq" is shared by the copies of one event on all
 * drives and grows by one per event; a drive that was offline has gaps.  A
 * key that is not UTF-8 is written as "key_hex".
 *
 * Tail anchor: the store keeps each copy's last durable entry (seq and
 * hash) beside it (locally in the drive's lock-clock file), so entries
 * removed from the end of a log older than a few seconds are found: by
 * verify, and at open, which records them as "AuditEntriesMissing".
 */
#include "meta_internal.h"

#include "store.h"
#ifdef STRATA_HAVE_RADOS
#include "rados/rados.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/sha.h>

#include "strata/assert.h"
#include "strata/hex.h"

#define AUDIT_LINE_MAX STRATA_META__AUDIT_LINE_MAX
/* Bytes kept of each caller-supplied string; escaped (6x at worst) a line
 * stays below AUDIT_LINE_MAX. */
#define AUDIT_DETAIL_MAX 1024
#define AUDIT_NAME_MAX 256 /* user, bucket */
#define AUDIT_WORD_MAX 64  /* version id, action, outcome */
#define AUDIT_HASH_TAG ",\"hash\":\""
#define AUDIT_HEX 64

static void hex32(const uint8_t h[32], char out[AUDIT_HEX + 1])
{
    strata_hex_encode(h, 32, out);
}

/* SHA-256 of line[0..len) as 64 lower-case hex characters. */
static void line_hash(const char *line, size_t len, char out[AUDIT_HEX + 1])
{
    uint8_t h[32];
    SHA256((const unsigned char *)line, len, h);
    hex32(h, out);
}

/* ---- verify ------------------------------------------------------------- */

bool strata_meta__hex64_valid(const char *s, size_t n)
{
    if (n != AUDIT_HEX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/*
 * Check one line (without its newline) against the previous entry's hash.
 * On success fills hash and seq; otherwise writes the reason.
 */
static bool check_line(const char *line, size_t len, const char *prev, uint64_t prev_seq,
                       bool first, char hash[AUDIT_HEX + 1], uint64_t *seq, char *why,
                       size_t whycap)
{
    const size_t tail = strlen(AUDIT_HASH_TAG) + AUDIT_HEX + 2; /* ,"hash":"<hex>"} */
    if (len < tail + 2 || memcmp(line + len - 2, "\"}", 2) != 0 ||
        memcmp(line + len - tail, AUDIT_HASH_TAG, strlen(AUDIT_HASH_TAG)) != 0) {
        snprintf(why, whycap, "entry does not end with its hash");
        return false;
    }
    const char *stored = line + len - tail + strlen(AUDIT_HASH_TAG);
    if (!strata_meta__hex64_valid(stored, AUDIT_HEX)) {
        snprintf(why, whycap, "malformed hash");
        return false;
    }
    line_hash(line, len - tail, hash);
    if (memcmp(hash, stored, AUDIT_HEX) != 0) {
        snprintf(why, whycap, "hash mismatch: entry altered");
        return false;
    }
    json_error_t jerr;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        snprintf(why, whycap, "not a JSON object");
        return false;
    }
    json_t *jp = json_object_get(o, "prev");
    json_t *js = json_object_get(o, "seq");
    bool ok = false;
    if (!json_is_string(jp) || !json_is_integer(js) || json_integer_value(js) <= 0) {
        snprintf(why, whycap, "missing prev or seq");
    } else if (strcmp(json_string_value(jp), prev) != 0) {
        snprintf(why, whycap, "prev does not match the previous entry: entry removed or reordered");
    } else if (!first && (uint64_t)json_integer_value(js) <= prev_seq) {
        snprintf(why, whycap, "seq %lld does not follow %llu",
                 (long long)json_integer_value(js), (unsigned long long)prev_seq);
    } else {
        *seq = (uint64_t)json_integer_value(js);
        ok = true;
    }
    json_decref(o);
    return ok;
}

/* Walk one copy (where: as the backend's audit_copy_open takes it) and
 * check it against its anchor, which anchor_name names in the reasons. */
static int verify_copy(const struct strata_meta__store_ops *ops, const char *drive_dir,
                       const char *anchor_name, struct strata_audit_verify *out)
{
    memset(out, 0, sizeof(*out));
    uint64_t aseq = 0;
    char ahash[AUDIT_HEX + 1];
    /* before the log: it only grows */
    bool anchored = ops->audit_copy_anchor(drive_dir, &aseq, ahash);
    struct strata_meta__audit_copy *c;
    int orc = ops->audit_copy_open(drive_dir, &c);
    if (orc == STRATA_ENOTFOUND && anchored) {
        out->broken = true;
        snprintf(out->reason, sizeof(out->reason),
                 "audit.log is missing but %s recorded seq %llu", anchor_name,
                 (unsigned long long)aseq);
        return 0;
    }
    if (orc)
        return orc == STRATA_ENOTFOUND ? 0 : orc;
    char prev[AUDIT_HEX + 1];
    memset(prev, '0', AUDIT_HEX);
    prev[AUDIT_HEX] = 0;
    uint64_t prev_seq = 0;
    const char *line;
    size_t n;
    int rc;
    while ((rc = ops->audit_copy_next(c, &line, &n)) > 0) {
        uint64_t idx = out->entries;
        char hash[AUDIT_HEX + 1];
        uint64_t seq = 0;
        if (line[n - 1] != '\n') {
            snprintf(out->reason, sizeof(out->reason), "truncated entry (no newline)");
        } else if (n > AUDIT_LINE_MAX) {
            snprintf(out->reason, sizeof(out->reason), "entry longer than %u bytes",
                     AUDIT_LINE_MAX);
        } else if (!check_line(line, n - 1, prev, prev_seq, idx == 0, hash, &seq,
                               out->reason, sizeof(out->reason))) {
            /* reason set */
        } else if (anchored && (seq > aseq && prev_seq < aseq)) {
            snprintf(out->reason, sizeof(out->reason),
                     "entry seq %llu recorded in %s is missing before this one",
                     (unsigned long long)aseq, anchor_name);
        } else if (anchored && seq == aseq && memcmp(hash, ahash, AUDIT_HEX) != 0) {
            snprintf(out->reason, sizeof(out->reason),
                     "hash differs from the one recorded in %s: entry replaced", anchor_name);
        } else {
            memcpy(prev, hash, sizeof(prev));
            prev_seq = seq;
            out->last_seq = seq;
            out->entries++;
            continue;
        }
        out->broken = true;
        out->broken_at = idx;
        break;
    }
    if (!out->broken && anchored && prev_seq < aseq) {
        out->broken = true;
        out->broken_at = out->entries;
        snprintf(out->reason, sizeof(out->reason),
                 "log ends at seq %llu but %s recorded seq %llu: entries removed from the end",
                 (unsigned long long)prev_seq, anchor_name, (unsigned long long)aseq);
    }
    ops->audit_copy_close(c);
    return rc < 0 ? rc : 0;
}

/* A drive directory is a copy of the local store: verify needs no daemon,
 * so it reads through the local ops directly. */
int strata_audit_verify_drive(const char *drive_dir, struct strata_audit_verify *out)
{
    return verify_copy(&strata_meta__store_local, drive_dir, "lock-clock", out);
}

int strata_meta_audit_verify(struct strata_meta *m, struct strata_audit_verify *out, char *name,
                             size_t cap)
{
    STRATA_ASSERT(m && out && name && cap);
    memset(out, 0, sizeof(*out));
    name[0] = 0;
    if (!m->store->audit_chain)
        return STRATA_ENOTIMPL;
    char copy[4200];
    int rc = m->store->audit_chain(m, copy, sizeof(copy), name, cap);
    return rc ? rc : verify_copy(m->store, copy, "the audit tail", out);
}

#ifdef STRATA_HAVE_RADOS
/* The cluster's chain: one copy, its tail (audit.N's \x01tail) the anchor. */
int strata_audit_verify_rados(const struct strata_rados_opts *o, struct strata_audit_verify *out)
{
    char where[4200];
    memset(out, 0, sizeof(*out));
    if (!o || !o->conf || strata_meta__rados_audit_where(where, sizeof(where), o) != 0)
        return STRATA_EINVAL;
    return verify_copy(&strata_meta__store_rados, where, "the audit tail", out);
}
#endif

/* ---- compare across drives --------------------------------------------- */

/* ,"prev":"<64 hex>","hash":"<64 hex>"} after an entry's event fields. */
#define AUDIT_SUFFIX_LEN (9 + AUDIT_HEX + 1 + 9 + AUDIT_HEX + 2)

struct cmp_log {
    struct strata_meta__audit_copy *c;
    int err;          /* a read error */
    uint64_t seq;     /* of line; 0 when done */
    const char *body; /* the event fields of line */
    size_t body_len;
};

/* Next entry of l; l->seq 0 at the end or at a line verify would refuse. */
static void cmp_next(struct cmp_log *l)
{
    l->seq = 0;
    if (!l->c)
        return;
    const char *line;
    size_t n;
    int r = strata_meta__store_local.audit_copy_next(l->c, &line, &n);
    if (r < 0)
        l->err = r;
    if (r <= 0 || line[n - 1] != '\n' || n - 1 < AUDIT_SUFFIX_LEN + 8 ||
        strncmp(line, "{\"seq\":", 7) != 0)
        return;
    char *end;
    unsigned long long seq = strtoull(line + 7, &end, 10);
    size_t suffix = n - 1 - AUDIT_SUFFIX_LEN;
    if (end == line + 7 || seq == 0 || (size_t)(end - line) > suffix ||
        memcmp(line + suffix, ",\"prev\":\"", 9) != 0)
        return;
    l->seq = seq;
    l->body = end;
    l->body_len = suffix - (size_t)(end - line);
}

int strata_audit_compare_drives(const char *const *drive_dirs, unsigned n,
                                struct strata_audit_compare *out)
{
    memset(out, 0, sizeof(*out));
    struct cmp_log *l = calloc(n ? n : 1, sizeof(*l));
    if (!l)
        return STRATA_ENOMEM;
    int rc = 0;
    for (unsigned i = 0; i < n && rc == 0; i++) {
        int orc = strata_meta__store_local.audit_copy_open(drive_dirs[i], &l[i].c);
        if (orc && orc != STRATA_ENOTFOUND)
            rc = orc;
        cmp_next(&l[i]);
    }
    while (rc == 0 && !out->differ) {
        /* The smallest seq among the drives' current entries. */
        uint64_t seq = 0;
        for (unsigned i = 0; i < n; i++)
            if (l[i].seq && (!seq || l[i].seq < seq))
                seq = l[i].seq;
        if (!seq)
            break;
        out->events++;
        int first = -1;
        for (unsigned i = 0; i < n; i++) {
            if (l[i].seq != seq)
                continue;
            if (first < 0) {
                first = (int)i;
            } else if (l[i].body_len != l[first].body_len ||
                       memcmp(l[i].body, l[first].body, l[i].body_len) != 0) {
                out->differ = true;
                out->seq = seq;
                out->drive_a = (unsigned)first;
                out->drive_b = i;
                break;
            }
        }
        for (unsigned i = 0; i < n && !out->differ; i++)
            if (l[i].seq == seq)
                cmp_next(&l[i]);
    }
    for (unsigned i = 0; i < n; i++) {
        if (l[i].err)
            rc = l[i].err;
        strata_meta__store_local.audit_copy_close(l[i].c);
    }
    free(l);
    return rc;
}

/* ---- open / close ------------------------------------------------------- */

/* The store's view of a line (strata_meta__audit_tail_fn): its seq and
 * hash, read from the entry without checking its chain. */
static bool line_tail(const char *line, size_t len, uint64_t *seq, char hash[AUDIT_HEX + 1])
{
    const size_t tail = strlen(AUDIT_HASH_TAG) + AUDIT_HEX + 2;
    json_error_t jerr;
    json_t *o = json_loadb(line, len, 0, &jerr);
    json_t *js = o ? json_object_get(o, "seq") : NULL;
    bool ok = len >= tail && json_is_integer(js) && json_integer_value(js) > 0 &&
              strata_meta__hex64_valid(line + len - tail + strlen(AUDIT_HASH_TAG), AUDIT_HEX);
    if (ok) {
        *seq = (uint64_t)json_integer_value(js);
        memcpy(hash, line + len - tail + strlen(AUDIT_HASH_TAG), AUDIT_HEX);
        hash[AUDIT_HEX] = 0;
    }
    json_decref(o);
    return ok;
}

void strata_meta__audit_note(struct strata_meta *m, const char *action, const char *outcome,
                             const char *detail)
{
    struct strata_audit_event ev = {.user = "-", .bucket = "-", .action = action,
                                    .outcome = outcome, .detail = detail};
    int rc = strata_meta_audit_append(m, &ev);
    if (rc)
        strata_log(&m->log, STRATA_LOG_ERR, "meta", "audit: cannot record %s: %s", action,
                   strata_errname(rc));
}

int strata_meta__audit_open(struct strata_meta *m)
{
    struct strata_meta__audit_found found;
    int rc = m->store->audit_open(m, line_tail, &found);
    if (rc)
        return rc;
    /* What open found is itself recorded, so it never goes unseen. */
    if (found.missing[0])
        strata_meta__audit_note(m, "AuditEntriesMissing", "detected", found.missing);
    if (found.torn[0])
        strata_meta__audit_note(m, "AuditTornEntry", "repaired", found.torn);
    return 0;
}

void strata_meta__audit_close(struct strata_meta *m)
{
    if (m->store)
        m->store->audit_close(m);
}

/* ---- append ------------------------------------------------------------- */

static int set_str(json_t *o, const char *name, const char *v)
{
    json_t *j = json_string(v);
    if (!j)
        return STRATA_EINVAL; /* not UTF-8 */
    return json_object_set_new(o, name, j) == 0 ? 0 : STRATA_ENOMEM;
}

/* Length of v cut to at most cap bytes, not inside a UTF-8 sequence. */
static size_t utf8_cut(const char *v, size_t cap)
{
    size_t n = strnlen(v, cap + 1);
    if (n <= cap)
        return n;
    n = cap;
    while (n > 0 && ((unsigned char)v[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/*
 * Set a caller-supplied string, cut to cap bytes (so every line stays far
 * below AUDIT_LINE_MAX).  NULL v sets fallback (or nothing when fallback is
 * NULL); a string that is not UTF-8 is recorded as bad rather than
 * dropping the event.  STRATA_EINVAL when v is not UTF-8 and bad is NULL.
 */
static int set_field(json_t *o, const char *name, const char *v, size_t cap,
                     const char *fallback, const char *bad)
{
    if (!v)
        return fallback ? set_str(o, name, fallback) : 0;
    json_t *j = json_stringn(v, utf8_cut(v, cap));
    if (!j)
        return bad ? set_str(o, name, bad) : STRATA_EINVAL;
    return json_object_set_new(o, name, j) == 0 ? 0 : STRATA_ENOMEM;
}

/* The event's fields between "seq" and "prev", as ',"time":...' text. */
static int body_build(struct strata_meta *m, const struct strata_audit_event *ev, char **out)
{
    json_t *o = json_object();
    if (!o)
        return STRATA_ENOMEM;
    int64_t lock_ms = strata_meta_lock_now_ms(m);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char iso[32];
    strata_meta__iso8601(lock_ms, iso);
    int rc = set_str(o, "time", iso);
    rc = rc ? rc : json_object_set_new(o, "lock_ms", json_integer(lock_ms));
    rc = rc ? rc
            : json_object_set_new(o, "wall_ms",
                                  json_integer((json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000));
    rc = rc ? rc : set_field(o, "user", ev->user, AUDIT_NAME_MAX, "-", "-");
    rc = rc ? rc : set_field(o, "bucket", ev->bucket, AUDIT_NAME_MAX, "-", "-");
    if (!rc && ev->key && set_field(o, "key", ev->key, STRATA_KEY_MAX, NULL, NULL) != 0) {
        size_t kl = utf8_cut(ev->key, STRATA_KEY_MAX);
        char *hex = malloc(2 * kl + 1);
        if (!hex) {
            rc = STRATA_ENOMEM;
        } else {
            strata_hex_encode((const uint8_t *)ev->key, kl, hex);
            rc = set_str(o, "key_hex", hex);
            free(hex);
        }
    }
    rc = rc ? rc : set_field(o, "version_id", ev->version_id, AUDIT_WORD_MAX, NULL, "-");
    rc = rc ? rc : set_field(o, "action", ev->action, AUDIT_WORD_MAX, "-", "-");
    rc = rc ? rc : set_field(o, "outcome", ev->outcome, AUDIT_WORD_MAX, "-", "-");
    rc = rc ? rc : set_field(o, "detail", ev->detail, AUDIT_DETAIL_MAX, NULL, "(not UTF-8)");
    char *s = rc ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (rc)
        return rc;
    if (!s)
        return STRATA_ENOMEM;
    size_t n = strlen(s);
    STRATA_ASSERT(n >= 2 && s[0] == '{' && s[n - 1] == '}');
    s[0] = ',';   /* ',"time":...' follows '{"seq":N' */
    s[n - 1] = 0; /* the caller appends prev and hash */
    *out = s;
    return 0;
}

/* Seal entry seq on one copy (strata_meta__audit_seal_fn): '{"seq":N',
 * the event's fields, the copy's prev, then the hash of all of it. */
static size_t line_seal(uint64_t seq, const char *body, const char *prev, char *line, size_t cap,
                        char hash[AUDIT_HEX + 1])
{
    int n = snprintf(line, cap, "{\"seq\":%llu%s,\"prev\":\"%s\"", (unsigned long long)seq,
                     body, prev);
    STRATA_ASSERT(n > 0 && (size_t)n + strlen(AUDIT_HASH_TAG) + AUDIT_HEX + 3 < cap);
    line_hash(line, (size_t)n, hash);
    n += snprintf(line + n, cap - (size_t)n, "%s%s\"}\n", AUDIT_HASH_TAG, hash);
    return (size_t)n;
}

int strata_meta_audit_tail(struct strata_meta *m, unsigned n,
                           int (*cb)(void *ud, const char *line, size_t len), void *ud,
                           char *where, size_t cap)
{
    STRATA_ASSERT(m && cb && where && cap);
    where[0] = 0;
    if (!m->store->audit_tail)
        return STRATA_ENOTIMPL;
    return m->store->audit_tail(m, n, cb, ud, where, cap);
}

int strata_meta_audit_append(struct strata_meta *m, const struct strata_audit_event *ev)
{
    STRATA_ASSERT(m && ev);
    char *body = NULL;
    int rc = body_build(m, ev, &body);
    if (rc)
        return rc;
    rc = m->store->audit_append(m, body, line_seal);
    free(body);
    return rc;
}
