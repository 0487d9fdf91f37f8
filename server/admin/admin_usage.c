/*
 * admin_usage.c - GET /strata/admin/v1/usage[/BUCKET]: per bucket, the
 * current objects and their bytes, every version and its bytes, delete
 * markers and incomplete multipart uploads, counted by walking the
 * listings of meta.h (ListObjectVersions and ListMultipartUploads pages).
 * The walk is bounded (STRATA_ADMIN_USAGE_SCAN_MAX entries per request);
 * a bucket whose count stopped there says "complete": false.  It runs on
 * the connection's thread, so a large scan holds only its own client.
 */
#include "admin_internal.h"

#include <stdlib.h>
#include <string.h>

#include "strata/err.h"

#define STRATA_ADMIN_USAGE_SCAN_MAX 2000000u
#define PAGE 1000u

struct usage {
    uint64_t objects, bytes, versions, version_bytes, delete_markers, uploads;
    uint64_t budget; /* entries this request may still visit */
    bool complete;
};

static int version_cb(const struct strata_list_entry *e, void *ud)
{
    struct usage *u = ud;
    if (e->is_prefix || !e->info)
        return 0;
    if (u->budget)
        u->budget--;
    if (e->info->delete_marker) {
        u->delete_markers++;
        return 0;
    }
    u->versions++;
    u->version_bytes += e->info->size;
    if (e->info->is_latest) {
        u->objects++;
        u->bytes += e->info->size;
    }
    return 0;
}

static int upload_cb(const struct strata_mpu_list_entry *e, void *ud)
{
    struct usage *u = ud;
    if (!e->is_prefix) {
        u->uploads++;
        if (u->budget)
            u->budget--;
    }
    return 0;
}

static int bucket_usage(struct strata_meta *m, const char *bucket, struct usage *u)
{
    struct strata_list_result res;
    char *key = calloc(1, STRATA_KEY_MAX + 1), *vid = calloc(1, STRATA_VERSION_ID_MAX + 1);
    int rc = key && vid ? 0 : STRATA_ENOMEM;
    u->complete = true;
    bool more = true;
    while (rc == 0 && more) {
        if (u->budget == 0) {
            u->complete = false;
            break;
        }
        struct strata_list_opts o = {.bucket = bucket, .versions = true, .max_keys = PAGE,
                                     .maintenance = true,
                                     .start_after = key[0] ? key : NULL,
                                     .version_id_marker = vid[0] ? vid : NULL};
        memset(&res, 0, sizeof(res));
        rc = strata_obj_list(m, &o, version_cb, u, &res);
        more = rc == 0 && res.truncated;
        if (more) {
            memcpy(key, res.next_key, sizeof(res.next_key));
            memcpy(vid, res.next_version_id, sizeof(res.next_version_id));
        }
    }
    if (rc == 0)
        key[0] = vid[0] = '\0';
    more = true;
    while (rc == 0 && more) {
        if (u->budget == 0) {
            u->complete = false;
            break;
        }
        struct strata_mpu_list_opts o = {.bucket = bucket, .max_uploads = PAGE,
                                         .key_marker = key[0] ? key : NULL,
                                         .upload_id_marker = key[0] && vid[0] ? vid : NULL};
        struct strata_mpu_list_result mres;
        memset(&mres, 0, sizeof(mres));
        rc = strata_mpu_list(m, &o, upload_cb, u, &mres);
        more = rc == 0 && mres.truncated;
        if (more) {
            snprintf(key, STRATA_KEY_MAX + 1, "%s", mres.next_key_marker);
            snprintf(vid, STRATA_VERSION_ID_MAX + 1, "%s", mres.next_upload_id_marker);
        }
    }
    free(key);
    free(vid);
    return rc;
}

struct names {
    char **v;
    size_t n, cap;
};

static int name_cb(const struct strata_bucket_info *b, void *ud)
{
    struct names *ns = ud;
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 16;
        char **v = realloc(ns->v, cap * sizeof(*v));
        if (!v)
            return STRATA_ENOMEM;
        ns->v = v;
        ns->cap = cap;
    }
    if (!(ns->v[ns->n] = strdup(b->name)))
        return STRATA_ENOMEM;
    ns->n++;
    return 0;
}

void strata_admin__usage(struct strata_req *r, const char *arg)
{
    struct names ns = {0};
    int rc = 0;
    if (arg) {
        struct strata_bucket_info bi;
        rc = strata_meta_bucket_get(r->srv->meta, arg, &bi);
        if (rc == STRATA_ENOTFOUND) {
            strata_admin__error(r, 404, "NoSuchBucket", "The specified bucket does not exist.");
            return;
        }
        if (rc == 0)
            rc = name_cb(&bi, &ns);
    } else {
        rc = strata_meta_bucket_list(r->srv->meta, name_cb, &ns);
    }
    json_t *buckets = json_array();
    struct usage total = {0};
    uint64_t budget = STRATA_ADMIN_USAGE_SCAN_MAX;
    bool complete = true;
    for (size_t i = 0; rc == 0 && i < ns.n; i++) {
        struct usage u = {.budget = budget};
        rc = bucket_usage(r->srv->meta, ns.v[i], &u);
        /* A bucket deleted while we walked it is simply gone. */
        if (rc == STRATA_ENOTFOUND) {
            rc = 0;
            continue;
        }
        budget = u.budget;
        complete = complete && u.complete;
        total.objects += u.objects;
        total.bytes += u.bytes;
        total.versions += u.versions;
        total.version_bytes += u.version_bytes;
        total.delete_markers += u.delete_markers;
        total.uploads += u.uploads;
        json_array_append_new(
            buckets, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "name", ns.v[i],
                               "objects", (json_int_t)u.objects, "bytes", (json_int_t)u.bytes,
                               "versions", (json_int_t)u.versions, "versions_bytes",
                               (json_int_t)u.version_bytes, "delete_markers",
                               (json_int_t)u.delete_markers, "incomplete_uploads",
                               (json_int_t)u.uploads, "complete", u.complete));
    }
    for (size_t i = 0; i < ns.n; i++)
        free(ns.v[i]);
    free(ns.v);
    if (rc) {
        json_decref(buckets);
        char msg[128];
        snprintf(msg, sizeof(msg), "usage scan failed: %s", strata_strerror(rc));
        strata_admin__error(r, rc == STRATA_EQUORUM ? 503 : 500,
                            rc == STRATA_EQUORUM ? "ServiceUnavailable" : "InternalError", msg);
        return;
    }
    json_t *doc = json_pack("{s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I}, s:b, s:I}",
                            "buckets", buckets, "total", "objects", (json_int_t)total.objects,
                            "bytes", (json_int_t)total.bytes, "versions",
                            (json_int_t)total.versions, "versions_bytes",
                            (json_int_t)total.version_bytes, "delete_markers",
                            (json_int_t)total.delete_markers, "incomplete_uploads",
                            (json_int_t)total.uploads, "complete", complete, "scan_limit",
                            (json_int_t)STRATA_ADMIN_USAGE_SCAN_MAX);
    strata_admin__send_json(r, 200, doc);
}
