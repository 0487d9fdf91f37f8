/*
 * acl.c - S3 access control lists (see acl.h): canned ACLs, grant
 * headers, the msgpack stored form, the XML answer and evaluation.
 * Pure; any thread.
 */
#include "acl.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <msgpack.h>

#define ACL_FORMAT 1

static const char *const group_uris[] = {
    [STRATA_ACL_ALL_USERS] = "http://acs.amazonaws.com/groups/global/AllUsers",
    [STRATA_ACL_AUTH_USERS] = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers",
    [STRATA_ACL_LOG_DELIVERY] = "http://acs.amazonaws.com/groups/s3/LogDelivery",
};

static const struct {
    const char *name;
    int perm;
} perms[] = {
    {"READ", STRATA_ACL_READ},           {"WRITE", STRATA_ACL_WRITE},
    {"READ_ACP", STRATA_ACL_READ_ACP},   {"WRITE_ACP", STRATA_ACL_WRITE_ACP},
    {"FULL_CONTROL", STRATA_ACL_FULL_CONTROL},
};

int strata_acl_perm_parse(const char *name)
{
    for (size_t i = 0; i < sizeof(perms) / sizeof(perms[0]); i++)
        if (strcmp(perms[i].name, name) == 0)
            return perms[i].perm;
    return 0;
}

const char *strata_acl_perm_name(int perm)
{
    for (size_t i = 0; i < sizeof(perms) / sizeof(perms[0]); i++)
        if (perms[i].perm == perm)
            return perms[i].name;
    return "FULL_CONTROL";
}

int strata_acl_group_parse(const char *uri)
{
    for (int t = STRATA_ACL_ALL_USERS; t <= STRATA_ACL_LOG_DELIVERY; t++)
        if (strcmp(group_uris[t], uri) == 0)
            return t;
    return -1;
}

const char *strata_acl_group_uri(int type)
{
    return type >= STRATA_ACL_ALL_USERS && type <= STRATA_ACL_LOG_DELIVERY ? group_uris[type]
                                                                            : "";
}

void strata_acl_default(struct strata_acl *a, const char *owner)
{
    a->n = 0;
    snprintf(a->owner, sizeof(a->owner), "%s", owner);
    strata_acl_add(a, STRATA_ACL_USER, STRATA_ACL_FULL_CONTROL, owner);
}

enum strata_auth_err strata_acl_add(struct strata_acl *a, int type, int perm, const char *id)
{
    if (type != STRATA_ACL_USER)
        id = "";
    if (strlen(id) >= STRATA_ACL_ID_MAX)
        return STRATA_AUTH_BAD_ARGUMENT;
    for (size_t i = 0; i < a->n; i++)
        if (a->g[i].type == type && a->g[i].perm == perm && strcmp(a->g[i].id, id) == 0)
            return STRATA_AUTH_OK;
    if (a->n == STRATA_ACL_GRANTS_MAX)
        return STRATA_AUTH_BAD_ARGUMENT;
    struct strata_acl_grant *g = &a->g[a->n++];
    memset(g, 0, sizeof(*g)); /* whole grants compare with memcmp */
    g->type = (uint8_t)type;
    g->perm = (uint8_t)perm;
    snprintf(g->id, sizeof(g->id), "%s", id);
    return STRATA_AUTH_OK;
}

enum strata_auth_err strata_acl_canned(struct strata_acl *a, const char *name, bool bucket,
                                       const char *owner, const char *bucket_owner)
{
    strata_acl_default(a, owner);
    if (strcmp(name, "private") == 0)
        return STRATA_AUTH_OK;
    if (strcmp(name, "public-read") == 0)
        return strata_acl_add(a, STRATA_ACL_ALL_USERS, STRATA_ACL_READ, NULL);
    if (strcmp(name, "public-read-write") == 0) {
        strata_acl_add(a, STRATA_ACL_ALL_USERS, STRATA_ACL_READ, NULL);
        return strata_acl_add(a, STRATA_ACL_ALL_USERS, STRATA_ACL_WRITE, NULL);
    }
    if (strcmp(name, "authenticated-read") == 0)
        return strata_acl_add(a, STRATA_ACL_AUTH_USERS, STRATA_ACL_READ, NULL);
    /* The bucket-owner-* ACLs grant the owner of the bucket; on a bucket,
     * or on an object the bucket owner owns, they amount to private (AWS
     * ignores them on buckets). */
    bool own = bucket || strcmp(owner, bucket_owner) == 0;
    if (strcmp(name, "bucket-owner-read") == 0)
        return own ? STRATA_AUTH_OK
                   : strata_acl_add(a, STRATA_ACL_USER, STRATA_ACL_READ, bucket_owner);
    if (strcmp(name, "bucket-owner-full-control") == 0)
        return own ? STRATA_AUTH_OK
                   : strata_acl_add(a, STRATA_ACL_USER, STRATA_ACL_FULL_CONTROL, bucket_owner);
    if (strcmp(name, "log-delivery-write") == 0 && bucket) {
        strata_acl_add(a, STRATA_ACL_LOG_DELIVERY, STRATA_ACL_WRITE, NULL);
        return strata_acl_add(a, STRATA_ACL_LOG_DELIVERY, STRATA_ACL_READ_ACP, NULL);
    }
    if (strcmp(name, "aws-exec-read") == 0)
        return STRATA_AUTH_UNSUPPORTED;
    return STRATA_AUTH_BAD_ARGUMENT;
}

/* One "key=value" item of a grant header (value possibly quoted). */
static enum strata_auth_err grant_item(struct strata_acl *a, int perm, const char *item, size_t len,
                                       strata_acl_resolve_cb resolve, void *ud)
{
    while (len && (*item == ' ' || *item == '\t'))
        item++, len--;
    while (len && (item[len - 1] == ' ' || item[len - 1] == '\t'))
        len--;
    const char *eq = memchr(item, '=', len);
    if (!eq)
        return STRATA_AUTH_BAD_ARGUMENT;
    size_t kl = (size_t)(eq - item);
    const char *v = eq + 1;
    size_t vl = len - kl - 1;
    if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"')
        v++, vl -= 2;
    char val[256];
    if (vl == 0 || vl >= sizeof(val) || memchr(v, '"', vl))
        return STRATA_AUTH_BAD_ARGUMENT;
    memcpy(val, v, vl);
    val[vl] = '\0';
    char id[STRATA_ACL_ID_MAX];
    if (kl == 2 && strncasecmp(item, "id", 2) == 0) {
        if (!resolve(ud, false, val, id))
            return STRATA_AUTH_BAD_ARGUMENT;
        return strata_acl_add(a, STRATA_ACL_USER, perm, id);
    }
    if (kl == 3 && strncasecmp(item, "uri", 3) == 0) {
        int t = strata_acl_group_parse(val);
        return t < 0 ? STRATA_AUTH_BAD_ARGUMENT : strata_acl_add(a, t, perm, NULL);
    }
    if (kl == 12 && strncasecmp(item, "emailAddress", 12) == 0) {
        if (!resolve(ud, true, val, id))
            return STRATA_AUTH_UNKNOWN_EMAIL;
        return strata_acl_add(a, STRATA_ACL_USER, perm, id);
    }
    return STRATA_AUTH_BAD_ARGUMENT;
}

enum strata_auth_err strata_acl_grant_hdr(struct strata_acl *a, int perm, const char *value,
                                          strata_acl_resolve_cb resolve, void *ud)
{
    const char *p = value;
    bool any = false;
    for (;;) {
        size_t n = strcspn(p, ",");
        enum strata_auth_err e = grant_item(a, perm, p, n, resolve, ud);
        if (e)
            return e;
        any = true;
        if (p[n] == '\0')
            break;
        p += n + 1;
    }
    return any ? STRATA_AUTH_OK : STRATA_AUTH_BAD_ARGUMENT;
}

static bool grant_holds(const struct strata_acl_grant *g, const char *caller, int perm,
                        bool ignore_public)
{
    if (g->perm != perm && g->perm != STRATA_ACL_FULL_CONTROL)
        return false;
    switch (g->type) {
    case STRATA_ACL_USER: return caller && strcmp(g->id, caller) == 0;
    case STRATA_ACL_ALL_USERS: return !ignore_public;
    case STRATA_ACL_AUTH_USERS: return !ignore_public && caller != NULL;
    default: return false; /* LogDelivery: no caller is the log delivery group */
    }
}

bool strata_acl_allows(const struct strata_acl *a, const char *caller, int perm,
                       bool ignore_public)
{
    if (caller && strcmp(caller, a->owner) == 0 &&
        (perm == STRATA_ACL_READ_ACP || perm == STRATA_ACL_WRITE_ACP))
        return true;
    for (size_t i = 0; i < a->n; i++)
        if (grant_holds(&a->g[i], caller, perm, ignore_public))
            return true;
    return false;
}

bool strata_acl_is_public(const struct strata_acl *a)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->g[i].type == STRATA_ACL_ALL_USERS || a->g[i].type == STRATA_ACL_AUTH_USERS)
            return true;
    return false;
}

bool strata_acl_is_owner_only(const struct strata_acl *a, const char *id)
{
    if (strcmp(a->owner, id) != 0)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (a->g[i].type != STRATA_ACL_USER || a->g[i].perm != STRATA_ACL_FULL_CONTROL ||
            strcmp(a->g[i].id, id) != 0)
            return false;
    return true;
}

bool strata_acl_is_default(const struct strata_acl *a, const char *id)
{
    return a->n == 1 && strata_acl_is_owner_only(a, id);
}

bool strata_acl_is_owner_full_control(const struct strata_acl *a, const char *bucket_owner)
{
    bool held = false;
    for (size_t i = 0; i < a->n; i++) {
        const struct strata_acl_grant *g = &a->g[i];
        if (g->type != STRATA_ACL_USER || g->perm != STRATA_ACL_FULL_CONTROL ||
            (strcmp(g->id, bucket_owner) != 0 && strcmp(g->id, a->owner) != 0))
            return false;
        held = held || strcmp(g->id, bucket_owner) == 0;
    }
    return held;
}

/* ---- stored form ---------------------------------------------------------- */

static int sbuf_write_cb(void *data, const char *buf, size_t len)
{
    return strata_sbuf_append(data, buf, len) == 0 ? 0 : -1;
}

static void pk_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

int strata_acl_encode(const struct strata_acl *a, struct strata_sbuf *out)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, sbuf_write_cb);
    msgpack_pack_array(&pk, 2 + 3 * a->n);
    msgpack_pack_uint64(&pk, ACL_FORMAT);
    pk_str(&pk, a->owner);
    for (size_t i = 0; i < a->n; i++) {
        msgpack_pack_uint64(&pk, a->g[i].type);
        msgpack_pack_uint64(&pk, a->g[i].perm);
        pk_str(&pk, a->g[i].id);
    }
    return out->failed ? -1 : 0;
}

static bool obj_str(const msgpack_object *o, char *out, size_t cap)
{
    if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= cap)
        return false;
    memcpy(out, o->via.str.ptr, o->via.str.size);
    out[o->via.str.size] = '\0';
    return true;
}

static bool obj_uint(const msgpack_object *o, uint64_t max, uint64_t *v)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > max)
        return false;
    *v = o->via.u64;
    return true;
}

int strata_acl_decode(const void *buf, size_t len, struct strata_acl *a)
{
    memset(a, 0, offsetof(struct strata_acl, g));
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    int rc = -1;
    if (msgpack_unpack_next(&up, buf, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len)
        goto out;
    const msgpack_object *o = &up.data;
    uint64_t fmt;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 2 ||
        (o->via.array.size - 2) % 3 != 0 ||
        (o->via.array.size - 2) / 3 > STRATA_ACL_GRANTS_MAX ||
        !obj_uint(&o->via.array.ptr[0], ACL_FORMAT, &fmt) || fmt != ACL_FORMAT ||
        !obj_str(&o->via.array.ptr[1], a->owner, sizeof(a->owner)))
        goto out;
    for (uint32_t i = 2; i < o->via.array.size; i += 3) {
        struct strata_acl_grant *g = &a->g[a->n];
        memset(g, 0, sizeof(*g));
        uint64_t t, p;
        if (!obj_uint(&o->via.array.ptr[i], STRATA_ACL_LOG_DELIVERY, &t) ||
            !obj_uint(&o->via.array.ptr[i + 1], STRATA_ACL_FULL_CONTROL, &p) ||
            p == 0 || (p & (p - 1)) != 0 ||
            !obj_str(&o->via.array.ptr[i + 2], g->id, sizeof(g->id)))
            goto out;
        g->type = (uint8_t)t;
        g->perm = (uint8_t)p;
        a->n++;
    }
    rc = 0;
out:
    msgpack_unpacked_destroy(&up);
    return rc;
}

int strata_acl_owner(const void *buf, size_t len, char *out)
{
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    uint64_t fmt;
    int rc = msgpack_unpack_next(&up, buf, len, &off) == MSGPACK_UNPACK_SUCCESS &&
                     up.data.type == MSGPACK_OBJECT_ARRAY && up.data.via.array.size >= 2 &&
                     obj_uint(&up.data.via.array.ptr[0], ACL_FORMAT, &fmt) &&
                     fmt == ACL_FORMAT &&
                     obj_str(&up.data.via.array.ptr[1], out, STRATA_ACL_ID_MAX)
                 ? 0
                 : -1;
    msgpack_unpacked_destroy(&up);
    return rc;
}

/* ---- XML -------------------------------------------------------------------- */

static void user_elems(struct strata_sbuf *b, const char *id, strata_acl_name_cb name_cb,
                       void *ud)
{
    strata_sbuf_xml_elem(b, "ID", id);
    const char *name = name_cb ? name_cb(ud, id) : NULL;
    if (name)
        strata_sbuf_xml_elem(b, "DisplayName", name);
}

void strata_acl_xml(const struct strata_acl *a, strata_acl_name_cb name_cb, void *ud,
                    struct strata_sbuf *b)
{
    strata_sbuf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<AccessControlPolicy "
                        "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner>");
    user_elems(b, a->owner, name_cb, ud);
    strata_sbuf_puts(b, "</Owner><AccessControlList>");
    /* Group grants first, the order Ceph RGW answers in (AWS documents
     * none; Ceph's s3-tests compare grants by position). */
    for (size_t k = 0; k < 2 * a->n; k++) {
        const struct strata_acl_grant *g = &a->g[k % a->n];
        if ((g->type == STRATA_ACL_USER) == (k < a->n))
            continue;
        strata_sbuf_puts(b, "<Grant><Grantee "
                            "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"");
        if (g->type == STRATA_ACL_USER) {
            strata_sbuf_puts(b, "CanonicalUser\">");
            user_elems(b, g->id, name_cb, ud);
        } else {
            strata_sbuf_puts(b, "Group\">");
            strata_sbuf_xml_elem(b, "URI", strata_acl_group_uri(g->type));
        }
        strata_sbuf_puts(b, "</Grantee>");
        strata_sbuf_xml_elem(b, "Permission", strata_acl_perm_name(g->perm));
        strata_sbuf_puts(b, "</Grant>");
    }
    strata_sbuf_puts(b, "</AccessControlList></AccessControlPolicy>");
}
