/*
 * set.c - drive sets: format.json on every drive, the checks that refuse a
 * misassembled set, formatting of empty replacement drives, the O_DIRECT
 * probe, and the pool of io contexts that writers and readers borrow.
 *
 * format.json (jansson) holds deployment_id, set_index, drive_index,
 * drive_uuid, format_version, k, m, block_size and drives (every drive uuid
 * of the set, in set order).  It is written atomically: tmp file, fsync,
 * rename, fsync of the drive directory.
 *
 * A replacement drive (formatted into a set whose other drives are already
 * formatted) also gets the marker file HEAL_MARKER, written and synced
 * before format.json, and removed only by strata_set_drive_mark_healed once
 * heal has refilled it.  The drive is "fresh" while the marker exists, across
 * any number of restarts: meta/ does not let a fresh drive vote, since its
 * empty store would otherwise outvote the drives that hold the records.
 * Leftovers in tmp/ (writes a crash interrupted) are removed at open and by
 * strata_ec_tmp_reclaim, which may run on any thread.
 *
 * Threads: strata_set_open/close run on one thread; everything else here
 * may be called from any thread (the pool is locked, flags and stats are
 * relaxed atomics).  Open starts the set's drive probe thread (health.c),
 * close stops it first.
 */
#include "ec_internal.h"
#include "strata/hex.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MOD "erasure"

static void tmp_reclaim(struct strata_set *set, unsigned age_s, bool any_lock, unsigned *removed);

#define HEAL_MARKER "healing"

size_t strata_ec__round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

int strata_ec__errno_map(int e)
{
    switch (e) {
    case 0:
        return 0;
    case ENOENT:
    case ENOTDIR:
        return STRATA_ENOTFOUND;
    case ENOSPC:
    case EDQUOT:
        return STRATA_ENOSPC;
    case ENOMEM:
        return STRATA_ENOMEM;
    case EEXIST:
        return STRATA_EEXISTS;
    default:
        return STRATA_EIO;
    }
}

unsigned strata_ec__shard_drive(const struct strata_set *set,
                                const uint8_t data_id[STRATA_DATA_ID_LEN], unsigned shard)
{
    /* Data ids are random, but hash anyway so a caller-chosen id also spreads. */
    uint32_t h = strata_crc32c(0, data_id, STRATA_DATA_ID_LEN);
    return (unsigned)((shard + h % set->n) % set->n);
}

int strata_ec__shard_path(const struct strata_set *set, unsigned drive,
                          const uint8_t data_id[STRATA_DATA_ID_LEN], char **path, char **dir)
{
    char hex[2 * STRATA_DATA_ID_LEN + 1];
    strata_hex_encode(data_id, STRATA_DATA_ID_LEN, hex);
    const char *root = set->drives[drive].path;
    if (path && asprintf(path, "%s/data/%.2s/%s", root, hex, hex) < 0)
        return STRATA_ENOMEM;
    if (dir && asprintf(dir, "%s/data/%.2s", root, hex) < 0) {
        if (path)
            STRATA_FREE(*path);
        return STRATA_ENOMEM;
    }
    return 0;
}

static void uuid_new(char out[STRATA_EC_UUID_LEN + 1])
{
    uint8_t b[16];
    strata_data_id_new(b);
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    snprintf(out, STRATA_EC_UUID_LEN + 1,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
}

/* ---- format.json --------------------------------------------------------- */

struct fmt {
    char deployment_id[STRATA_EC_UUID_LEN + 1];
    char drive_uuid[STRATA_EC_UUID_LEN + 1];
    unsigned set_index, drive_index, version, k, m, ndrives;
    size_t block_size;
    char uuids[STRATA_DRIVES_MAX][STRATA_EC_UUID_LEN + 1];
};

enum drive_state { DRV_OFFLINE, DRV_EMPTY, DRV_FORMATTED };

int strata_ec__dir_fsync(const char *p)
{
    int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

static int fmt_write(const char *root, const struct fmt *f, struct strata_errinfo *ei)
{
    json_t *o = json_object(), *arr = json_array();
    if (!o || !arr) {
        json_decref(o);
        json_decref(arr);
        return STRATA_ENOMEM;
    }
    for (unsigned i = 0; i < f->ndrives; i++)
        json_array_append_new(arr, json_string(f->uuids[i]));
    json_object_set_new(o, "format_version", json_integer(f->version));
    json_object_set_new(o, "deployment_id", json_string(f->deployment_id));
    json_object_set_new(o, "set_index", json_integer(f->set_index));
    json_object_set_new(o, "drive_index", json_integer(f->drive_index));
    json_object_set_new(o, "drive_uuid", json_string(f->drive_uuid));
    json_object_set_new(o, "k", json_integer(f->k));
    json_object_set_new(o, "m", json_integer(f->m));
    json_object_set_new(o, "block_size", json_integer((json_int_t)f->block_size));
    json_object_set_new(o, "drives", arr);
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(o);
    if (!text)
        return STRATA_ENOMEM;

    char *tmp = NULL, *dst = NULL;
    int rc = 0;
    if (asprintf(&tmp, "%s/format.json.tmp", root) < 0 || asprintf(&dst, "%s/format.json", root) < 0) {
        rc = STRATA_ENOMEM;
        goto out;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = -errno;
        goto sys;
    }
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0) {
            rc = -errno;
            close(fd);
            unlink(tmp);
            goto sys;
        }
        done += (size_t)w;
    }
    if (fsync(fd) < 0 || close(fd) < 0) {
        rc = -errno;
        unlink(tmp);
        goto sys;
    }
    if (rename(tmp, dst) < 0) {
        rc = -errno;
        unlink(tmp);
        goto sys;
    }
    rc = strata_ec__dir_fsync(root);
    if (rc < 0)
        goto sys;
    goto out;
sys:
    if (ei) {
        ei->sys_errno = -rc;
        snprintf(ei->msg, sizeof(ei->msg), "drive %s: cannot write format.json: %s", root,
                 strerror(-rc));
    }
    rc = strata_ec__errno_map(-rc);
out:
    free(tmp);
    free(dst);
    free(text);
    return rc;
}

static int get_uint(json_t *o, const char *key, unsigned long long *v)
{
    json_t *j = json_object_get(o, key);
    if (!json_is_integer(j) || json_integer_value(j) < 0)
        return -1;
    *v = (unsigned long long)json_integer_value(j);
    return 0;
}

static int get_str(json_t *o, const char *key, char out[STRATA_EC_UUID_LEN + 1])
{
    json_t *j = json_object_get(o, key);
    if (!json_is_string(j) || json_string_length(j) != STRATA_EC_UUID_LEN)
        return -1;
    memcpy(out, json_string_value(j), STRATA_EC_UUID_LEN + 1);
    return 0;
}

/* Parse root/format.json.  Sets ei->msg on every failure. */
static int fmt_read(const char *root, struct fmt *f, struct strata_errinfo *ei)
{
    char *p = NULL;
    if (asprintf(&p, "%s/format.json", root) < 0)
        return STRATA_ENOMEM;
    json_error_t jerr;
    json_t *o = json_load_file(p, 0, &jerr);
    free(p);
    if (!o) {
        snprintf(ei->msg, sizeof(ei->msg), "drive %s: format.json unreadable: %s", root, jerr.text);
        return STRATA_EFORMAT;
    }
    unsigned long long v[6];
    memset(f, 0, sizeof(*f));
    int bad = get_uint(o, "format_version", &v[0]);
    if (!bad && (v[0] < STRATA_FORMAT_VERSION_MIN || v[0] > STRATA_FORMAT_VERSION)) {
        snprintf(ei->msg, sizeof(ei->msg),
                 "drive %s: unknown format version %llu (this build knows %d to %d)", root, v[0],
                 STRATA_FORMAT_VERSION_MIN, STRATA_FORMAT_VERSION);
        json_decref(o);
        return STRATA_EFORMAT;
    }
    bad = bad || get_uint(o, "set_index", &v[1]) || get_uint(o, "drive_index", &v[2]) ||
          get_uint(o, "k", &v[3]) || get_uint(o, "m", &v[4]) || get_uint(o, "block_size", &v[5]) ||
          get_str(o, "deployment_id", f->deployment_id) || get_str(o, "drive_uuid", f->drive_uuid);
    json_t *arr = json_object_get(o, "drives");
    if (!bad && (!json_is_array(arr) || json_array_size(arr) < STRATA_DRIVES_MIN ||
                 json_array_size(arr) > STRATA_DRIVES_MAX))
        bad = 1;
    if (!bad) {
        f->ndrives = (unsigned)json_array_size(arr);
        for (unsigned i = 0; i < f->ndrives && !bad; i++) {
            json_t *s = json_array_get(arr, i);
            if (!json_is_string(s) || json_string_length(s) != STRATA_EC_UUID_LEN)
                bad = 1;
            else
                memcpy(f->uuids[i], json_string_value(s), STRATA_EC_UUID_LEN + 1);
        }
    }
    json_decref(o);
    if (bad || v[3] < 1 || v[4] < 1 || v[3] + v[4] != f->ndrives || v[2] >= f->ndrives ||
        v[5] == 0 || v[5] > (1ull << 30)) {
        snprintf(ei->msg, sizeof(ei->msg), "drive %s: format.json is malformed", root);
        return STRATA_EFORMAT;
    }
    f->version = (unsigned)v[0];
    f->set_index = (unsigned)v[1];
    f->drive_index = (unsigned)v[2];
    f->k = (unsigned)v[3];
    f->m = (unsigned)v[4];
    f->block_size = (size_t)v[5];
    if (strcmp(f->uuids[f->drive_index], f->drive_uuid) != 0) {
        snprintf(ei->msg, sizeof(ei->msg), "drive %s: format.json drive_uuid not in its drive list",
                 root);
        return STRATA_EFORMAT;
    }
    return 0;
}

/* Classify a drive directory: formatted, empty (creating it if absent), or
 * offline.  A non-empty directory without format.json is refused, because
 * formatting over someone's files would be worse than not starting. */
static int drive_probe(const char *root, enum drive_state *st, struct strata_errinfo *ei)
{
    char *p = NULL;
    if (asprintf(&p, "%s/format.json", root) < 0)
        return STRATA_ENOMEM;
    struct stat sb;
    int r = stat(p, &sb);
    int e = errno;
    free(p);
    if (r == 0) {
        *st = DRV_FORMATTED;
        return 0;
    }
    if (e != ENOENT) {
        *st = DRV_OFFLINE;
        return 0;
    }
    if (mkdir(root, 0755) < 0 && errno != EEXIST) {
        *st = DRV_OFFLINE;
        return 0;
    }
    DIR *d = opendir(root);
    if (!d) {
        *st = DRV_OFFLINE;
        return 0;
    }
    struct dirent *de;
    bool empty = true;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "lost+found") ||
            !strcmp(n, "format.json.tmp") || !strcmp(n, HEAL_MARKER))
            continue;
        empty = false;
        break;
    }
    closedir(d);
    if (!empty) {
        snprintf(ei->msg, sizeof(ei->msg),
                 "drive %s: not empty and has no format.json; refusing to format it", root);
        return STRATA_EFORMAT;
    }
    *st = DRV_EMPTY;
    return 0;
}

/* Create root/HEAL_MARKER durably (file and directory entry synced). */
static int marker_write(const char *root)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/" HEAL_MARKER, root);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    static const char text[] = "this drive is being healed; do not remove\n";
    int rc = 0;
    if (write(fd, text, sizeof(text) - 1) != (ssize_t)(sizeof(text) - 1) || fsync(fd) < 0)
        rc = errno ? -errno : -EIO;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    return rc ? rc : strata_ec__dir_fsync(root);
}

static bool marker_exists(const char *root)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/" HEAL_MARKER, root);
    return access(p, F_OK) == 0;
}

/* meta/, data/ and tmp/; a drive that cannot take them is offline.  The
 * 256 data/<hh>/ fan-out directories are made on first use by the writer
 * (and by heal), which keeps opening a set cheap and lets a subdirectory
 * removed by hand come back. */
static int drive_dirs(const char *root)
{
    char p[4096];
    static const char *const sub[] = {"meta", "data", "tmp"};
    for (unsigned i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/%s", root, sub[i]);
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
            return -errno;
    }
    return 0;
}

/* Does this drive's filesystem accept O_DIRECT with 4 KiB aligned I/O? */
static bool direct_probe(const char *root)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/tmp/.odirect-probe", root);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    void *buf = NULL;
    bool ok = false;
    if (posix_memalign(&buf, STRATA_EC_ALIGN, STRATA_EC_ALIGN) == 0) {
        memset(buf, 0, STRATA_EC_ALIGN);
        ok = pwrite(fd, buf, STRATA_EC_ALIGN, 0) == (ssize_t)STRATA_EC_ALIGN &&
             pread(fd, buf, STRATA_EC_ALIGN, 0) == (ssize_t)STRATA_EC_ALIGN;
        free(buf);
    }
    close(fd);
    unlink(p);
    return ok;
}

static void set_free(struct strata_set *s)
{
    for (unsigned i = 0; i < STRATA_DRIVES_MAX; i++)
        free(s->drives[i].path);
    strata_ec_codec_destroy(s->codec);
    free(s);
}

int strata_set_open(const char *const *paths, unsigned n, const struct strata_set_opts *opts,
                    struct strata_set **out, struct strata_errinfo *ei)
{
    struct strata_errinfo dummy;
    if (!ei)
        ei = &dummy;
    memset(ei, 0, sizeof(*ei));
    ei->drive = -1;
    static const struct strata_set_opts defaults = {0};
    if (!opts)
        opts = &defaults;
    if (n < STRATA_DRIVES_MIN || n > STRATA_DRIVES_MAX || !paths) {
        snprintf(ei->msg, sizeof(ei->msg), "a set has %d to %d drives, %u given",
                 STRATA_DRIVES_MIN, STRATA_DRIVES_MAX, n);
        return STRATA_EINVAL;
    }
    unsigned m = opts->m ? opts->m : (n / 2 < 4 ? n / 2 : 4);
    if (m >= n) {
        snprintf(ei->msg, sizeof(ei->msg), "%u parity drives leave no data drive in a set of %u",
                 m, n);
        return STRATA_EINVAL;
    }
    size_t block_size = opts->block_size ? opts->block_size : STRATA_EC_BLOCK_SIZE_DEFAULT;
    unsigned layout = STRATA_FORMAT_VERSION;

    struct strata_set *s = calloc(1, sizeof(*s));
    if (!s)
        return STRATA_ENOMEM;
    s->n = n;
    s->set_index = opts->set_index;
    s->no_fsync = opts->no_fsync;
    s->log = opts->log;
    for (unsigned i = 0; i < n; i++) {
        s->drives[i].path = strdup(paths[i]);
        if (!s->drives[i].path) {
            set_free(s);
            return STRATA_ENOMEM;
        }
    }

    enum drive_state st[STRATA_DRIVES_MAX];
    struct fmt *fm = calloc(n, sizeof(*fm));
    if (!fm) {
        set_free(s);
        return STRATA_ENOMEM;
    }
    int rc = 0;
    unsigned nformatted = 0;
    for (unsigned i = 0; i < n && rc == 0; i++) {
        rc = drive_probe(paths[i], &st[i], ei);
        if (rc == 0 && st[i] == DRV_FORMATTED) {
            rc = fmt_read(paths[i], &fm[i], ei);
            nformatted++;
        }
        if (rc < 0)
            ei->drive = (int)i;
    }
    if (rc < 0)
        goto fail;

    /* The set's identity is the one most formatted drives agree on, so a
     * single foreign drive is the one named in the error, wherever it sits. */
    int ref = -1;
    unsigned best = 0;
    for (unsigned i = 0; i < n; i++) {
        if (st[i] != DRV_FORMATTED)
            continue;
        unsigned votes = 0;
        for (unsigned j = 0; j < n; j++)
            if (st[j] == DRV_FORMATTED && !strcmp(fm[i].deployment_id, fm[j].deployment_id) &&
                fm[i].set_index == fm[j].set_index)
                votes++;
        if (votes > best) {
            best = votes;
            ref = (int)i;
        }
    }

    if (ref >= 0) {
        const struct fmt *r = &fm[ref];
        if (r->ndrives != n) {
            snprintf(ei->msg, sizeof(ei->msg), "drive %s: formatted for a set of %u drives, %u given",
                     paths[ref], r->ndrives, n);
            ei->drive = ref;
            rc = STRATA_EFORMAT;
            goto fail;
        }
        if (r->set_index != opts->set_index) {
            snprintf(ei->msg, sizeof(ei->msg), "drive %s: belongs to set %u but was given for set %u",
                     paths[ref], r->set_index, opts->set_index);
            ei->drive = ref;
            rc = STRATA_EFORMAT;
            goto fail;
        }
        if (opts->m && opts->m != r->m) {
            snprintf(ei->msg, sizeof(ei->msg),
                     "drive %s: set was formatted with %u parity drives, %u requested", paths[ref],
                     r->m, opts->m);
            ei->drive = ref;
            rc = STRATA_EFORMAT;
            goto fail;
        }
        for (unsigned i = 0; i < n; i++) {
            if (st[i] != DRV_FORMATTED)
                continue;
            const struct fmt *f = &fm[i];
            ei->drive = (int)i;
            rc = STRATA_EFORMAT;
            if (strcmp(f->deployment_id, r->deployment_id) != 0) {
                snprintf(ei->msg, sizeof(ei->msg),
                         "drive %s: belongs to deployment %s, not to this set's deployment %s",
                         paths[i], f->deployment_id, r->deployment_id);
                goto fail;
            }
            if (f->set_index != r->set_index) {
                snprintf(ei->msg, sizeof(ei->msg), "drive %s: belongs to set %u, not set %u",
                         paths[i], f->set_index, r->set_index);
                goto fail;
            }
            if (f->drive_index != i) {
                snprintf(ei->msg, sizeof(ei->msg),
                         "drive %s: is drive %u of its set but was given as drive %u", paths[i],
                         f->drive_index, i);
                goto fail;
            }
            if (strcmp(f->drive_uuid, r->uuids[i]) != 0 || f->k != r->k || f->m != r->m ||
                f->block_size != r->block_size || f->version != r->version) {
                snprintf(ei->msg, sizeof(ei->msg),
                         "drive %s: its format disagrees with the set's (uuid or geometry)",
                         paths[i]);
                goto fail;
            }
        }
        ei->drive = -1;
        rc = 0;
        m = r->m;
        block_size = r->block_size;
        layout = r->version; /* a deployment keeps the format it was made with */
        memcpy(s->deployment_id, r->deployment_id, sizeof(s->deployment_id));
        for (unsigned i = 0; i < n; i++)
            memcpy(s->drives[i].uuid, r->uuids[i], sizeof(s->drives[i].uuid));
    } else {
        uuid_new(s->deployment_id);
        for (unsigned i = 0; i < n; i++)
            uuid_new(s->drives[i].uuid);
    }
    s->m = m;
    s->k = n - m;
    s->block_size = block_size;
    s->shard_size = strata_ec__round_up((block_size + s->k - 1) / s->k, STRATA_EC_ALIGN);
    s->layout = layout;

    /* Format the empty drives with the set's identity. */
    for (unsigned i = 0; i < n; i++) {
        if (st[i] != DRV_EMPTY)
            continue;
        struct fmt f = {0};
        memcpy(f.deployment_id, s->deployment_id, sizeof(f.deployment_id));
        memcpy(f.drive_uuid, s->drives[i].uuid, sizeof(f.drive_uuid));
        f.set_index = opts->set_index;
        f.drive_index = i;
        f.version = layout;
        f.k = s->k;
        f.m = s->m;
        f.block_size = block_size;
        f.ndrives = n;
        for (unsigned j = 0; j < n; j++)
            memcpy(f.uuids[j], s->drives[j].uuid, sizeof(f.uuids[j]));
        struct strata_errinfo wei = {0};
        /* A replacement needs healing: the marker goes first, so a crash
         * leaves either an empty drive (the marker alone does not count) or
         * a formatted one that is still marked. */
        bool replacement = ref >= 0;
        if ((replacement && marker_write(paths[i]) < 0) || fmt_write(paths[i], &f, &wei) < 0 ||
            drive_dirs(paths[i]) < 0) {
            strata_log(&s->log, STRATA_LOG_WARN, MOD, "drive %s: cannot format, offline (%s)",
                       paths[i], wei.msg);
            st[i] = DRV_OFFLINE;
            continue;
        }
        st[i] = DRV_FORMATTED;
    }

    unsigned online = 0;
    bool direct = opts->direct_io;
    for (unsigned i = 0; i < n; i++) {
        if (st[i] != DRV_FORMATTED || drive_dirs(paths[i]) < 0) {
            strata_log(&s->log, STRATA_LOG_WARN, MOD, "drive %s: offline", paths[i]);
            continue;
        }
        s->drives[i].online = true;
        s->drives[i].fresh = marker_exists(paths[i]);
        online++;
        if (direct && !direct_probe(paths[i]))
            direct = false;
    }
    s->direct_io = direct;
    s->read_cached_max = opts->read_cached_max;
    if (online < s->k) {
        snprintf(ei->msg, sizeof(ei->msg), "only %u of %u drives online, %u needed", online, n,
                 s->k);
        rc = STRATA_EQUORUM;
        goto fail;
    }
    rc = strata_ec_codec_create(s->k, s->m, &s->codec);
    if (rc < 0)
        goto fail;
    rc = strata_ec__probe_start(s);
    if (rc < 0)
        goto fail;
    pthread_mutex_init(&s->pool_mu, NULL);
    free(fm);
    (void)nformatted;
    /* Only this process uses the drives (meta/'s stores are locked), so
     * everything in tmp/ is a leftover of a write a crash interrupted. */
    unsigned removed = 0;
    tmp_reclaim(s, 0, true, &removed);
    if (removed)
        strata_log(&s->log, STRATA_LOG_NOTICE, MOD, "set %u: removed %u leftover tmp files",
                   s->set_index, removed);
    *out = s;
    return 0;
fail:
    free(fm);
    set_free(s);
    return rc;
}

static void io_free(struct strata_ec__io *io)
{
    strata_ec__obs_stop(io->obs);
    io_uring_queue_exit(&io->ring);
    for (unsigned i = 0; i < STRATA_EC_NBUF; i++)
        free(io->buf[i]);
    free(io);
}

void strata_set_close(struct strata_set *set)
{
    if (!set)
        return;
    strata_ec__probe_stop(set);
    while (set->pool) {
        struct strata_ec__io *io = set->pool;
        set->pool = io->next;
        io_free(io);
    }
    pthread_mutex_destroy(&set->pool_mu);
    set_free(set);
}

struct strata_ec__io *strata_ec__io_get(struct strata_set *set, int *err)
{
    pthread_mutex_lock(&set->pool_mu);
    struct strata_ec__io *io = set->pool;
    if (io) {
        set->pool = io->next;
        set->pool_len--;
    }
    pthread_mutex_unlock(&set->pool_mu);
    if (io)
        return io;
    io = calloc(1, sizeof(*io));
    if (!io) {
        *err = STRATA_ENOMEM;
        return NULL;
    }
    int r = io_uring_queue_init(STRATA_EC_RING_ENTRIES, &io->ring, 0);
    if (r < 0) {
        free(io);
        *err = r == -ENOMEM ? STRATA_ENOMEM : STRATA_EIO;
        return NULL;
    }
    io->fixed_table = io_uring_register_buffers_sparse(&io->ring, STRATA_EC_NBUF) == 0;
    if (!strata_ec__io_buf(set, io, 0)) {
        io_uring_queue_exit(&io->ring);
        free(io);
        *err = STRATA_ENOMEM;
        return NULL;
    }
    return io;
}

uint8_t *strata_ec__io_buf(const struct strata_set *set, struct strata_ec__io *io, unsigned i)
{
    STRATA_ASSERT(i < STRATA_EC_NBUF);
    if (io->buf[i])
        return io->buf[i];
    size_t len = (size_t)set->n * set->shard_size;
    if (posix_memalign((void **)&io->buf[i], STRATA_EC_ALIGN, len) != 0)
        return io->buf[i] = NULL;
    /* A refusal (over RLIMIT_MEMLOCK) leaves it a plain buffer. */
    struct iovec iov = {io->buf[i], len};
    if (io->fixed_table && io_uring_register_buffers_update_tag(&io->ring, i, &iov, NULL, 1) == 1)
        io->fixed |= 1u << i;
    return io->buf[i];
}

void strata_ec__io_put(struct strata_set *set, struct strata_ec__io *io)
{
    if (!io)
        return;
    pthread_mutex_lock(&set->pool_mu);
    if (set->pool_len < STRATA_EC_POOL_KEEP) {
        io->next = set->pool;
        set->pool = io;
        set->pool_len++;
        io = NULL;
    }
    pthread_mutex_unlock(&set->pool_mu);
    if (io)
        io_free(io);
}

unsigned strata_set_k(const struct strata_set *set)
{
    return set->k;
}
unsigned strata_set_m(const struct strata_set *set)
{
    return set->m;
}
unsigned strata_set_n(const struct strata_set *set)
{
    return set->n;
}
unsigned strata_set_write_quorum(const struct strata_set *set)
{
    return set->k == set->m ? set->k + 1 : set->k;
}
unsigned strata_set_read_quorum(const struct strata_set *set)
{
    return set->k;
}
size_t strata_set_shard_size(const struct strata_set *set)
{
    return set->shard_size;
}
size_t strata_set_stripe_size(const struct strata_set *set)
{
    return set->shard_size * set->k;
}

unsigned strata_set_format_version(const struct strata_set *set)
{
    return set->layout;
}
const char *strata_set_deployment_id(const struct strata_set *set)
{
    return set->deployment_id;
}
const char *strata_set_drive_path(const struct strata_set *set, unsigned drive)
{
    return drive < set->n ? set->drives[drive].path : NULL;
}
bool strata_set_drive_online(const struct strata_set *set, unsigned drive)
{
    return drive < set->n && set->drives[drive].online;
}
bool strata_set_drive_fresh(const struct strata_set *set, unsigned drive)
{
    return drive < set->n && __atomic_load_n(&set->drives[drive].fresh, __ATOMIC_RELAXED);
}
int strata_set_drive_mark_fresh(struct strata_set *set, unsigned drive)
{
    if (drive >= set->n || !set->drives[drive].online)
        return STRATA_EINVAL;
    int rc = marker_write(set->drives[drive].path);
    if (rc < 0)
        return strata_ec__errno_map(-rc);
    __atomic_store_n(&set->drives[drive].fresh, true, __ATOMIC_RELAXED);
    return 0;
}

int strata_set_drive_mark_healed(struct strata_set *set, unsigned drive)
{
    if (drive >= set->n)
        return STRATA_EINVAL;
    char p[4096];
    snprintf(p, sizeof(p), "%s/" HEAL_MARKER, set->drives[drive].path);
    if (unlink(p) < 0 && errno != ENOENT)
        return strata_ec__errno_map(errno);
    int rc = strata_ec__dir_fsync(set->drives[drive].path);
    if (rc < 0)
        return strata_ec__errno_map(-rc); /* stays fresh: the marker may come back */
    __atomic_store_n(&set->drives[drive].fresh, false, __ATOMIC_RELAXED);
    return 0;
}

void strata_set_stats_get(const struct strata_set *set, struct strata_set_stats *out)
{
    out->bitrot_detected = __atomic_load_n(&set->stats.bitrot_detected, __ATOMIC_RELAXED);
    out->shards_missing = __atomic_load_n(&set->stats.shards_missing, __ATOMIC_RELAXED);
    out->stripes_reconstructed =
        __atomic_load_n(&set->stats.stripes_reconstructed, __ATOMIC_RELAXED);
    out->shards_healed = __atomic_load_n(&set->stats.shards_healed, __ATOMIC_RELAXED);
}

/* Whether the tmp/ file name in dir is a leftover: unchanged for age_s
 * seconds (to the nanosecond: a file written a moment ago in the previous
 * second is young) and not held by a writer (strata_ec__tmp_create).
 * Removed if so, under the lock so no writer can take it meanwhile.  At
 * open (any_lock) a held lock is not a writer of this process: it is a
 * killed one whose io_uring still holds the file while the kernel tears
 * the ring down after the process has been reaped. */
static bool tmp_leftover_remove(int dir, const char *name, const struct timespec *now,
                                unsigned age_s, bool any_lock)
{
    struct stat sb;
    if (fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sb.st_mode))
        return false;
    int64_t age_ns = (int64_t)(now->tv_sec - sb.st_mtim.tv_sec) * 1000000000 +
                     (now->tv_nsec - sb.st_mtim.tv_nsec);
    if (age_ns < (int64_t)age_s * 1000000000)
        return false;
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool held = !any_lock && flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    bool gone = !held && unlinkat(dir, name, 0) == 0;
    close(fd);
    return gone;
}

static void tmp_reclaim(struct strata_set *set, unsigned age_s, bool any_lock, unsigned *removed)
{
    unsigned count = 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (unsigned d = 0; d < set->n; d++) {
        if (!set->drives[d].online)
            continue;
        char p[4096];
        snprintf(p, sizeof(p), "%s/tmp", set->drives[d].path);
        DIR *dir = opendir(p);
        if (!dir)
            continue; /* a vanished drive has nothing to reclaim */
        struct dirent *de;
        while ((de = readdir(dir))) {
            if (de->d_name[0] == '.' &&
                (de->d_name[1] == '\0' || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
                continue;
            if (tmp_leftover_remove(dirfd(dir), de->d_name, &now, age_s, any_lock))
                count++;
        }
        closedir(dir);
    }
    if (removed)
        *removed = count;
}

int strata_ec_tmp_reclaim(struct strata_set *set, unsigned age_s, unsigned *removed)
{
    tmp_reclaim(set, age_s, false, removed);
    return 0;
}
