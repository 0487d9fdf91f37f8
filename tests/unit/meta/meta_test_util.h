/*
 * meta_test_util.h - fixtures for the meta/ unit tests: a fresh set of four
 * drive directories under $STRATA_TEST_TMPDIR per test, open/close of the
 * set and the meta handle, put/get helpers and file counting.
 * Header-only (static functions) so each test executable stands alone.
 */
#ifndef STRATA_TESTS_META_TEST_UTIL_H
#define STRATA_TESTS_META_TEST_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "strata/meta.h"

#define MT_DRIVES 4

struct mt_env {
    char root[512];
    char drive[MT_DRIVES][600];
    const char *paths[MT_DRIVES];
    struct strata_set *set;
    struct strata_meta *m;
    unsigned parity; /* the set's parity drives; 0: the set's default */
};

static inline int mt_rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static inline void mt_rm_rf(const char *p)
{
    nftw(p, mt_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Open set and meta over e's drives; mo NULL: meta's defaults. */
static inline int mt_open_with(struct mt_env *e, const struct strata_meta_opts *mo)
{
    struct strata_set_opts so;
    memset(&so, 0, sizeof(so));
    so.m = e->parity;
    struct strata_errinfo ei;
    memset(&ei, 0, sizeof(ei));
    int rc = strata_set_open(e->paths, MT_DRIVES, &so, &e->set, &ei);
    if (rc) {
        fprintf(stderr, "set open: %s %s\n", strata_errname(rc), ei.msg);
        return rc;
    }
    rc = strata_meta_open(&e->set, 1, mo, &e->m, &ei);
    if (rc) {
        fprintf(stderr, "meta open: %s %s\n", strata_errname(rc), ei.msg);
        strata_set_close(e->set);
        e->set = NULL;
    }
    return rc;
}

static inline int mt_open(struct mt_env *e)
{
    return mt_open_with(e, NULL);
}

static inline void mt_close(struct mt_env *e)
{
    strata_meta_close(e->m);
    e->m = NULL;
    strata_set_close(e->set);
    e->set = NULL;
}

/* An Object Lock bucket (versioning enabled for good), owner "tester". */
static inline int mt_lock_bucket(struct mt_env *e, const char *name)
{
    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "%s", name);
    snprintf(b.owner, sizeof(b.owner), "tester");
    b.versioning = STRATA_VERSIONING_ENABLED;
    b.object_lock = true;
    return strata_meta_bucket_create(e->m, &b);
}

/* Take drive i away (a file where its directory was: it cannot open) or
 * bring it back; with the meta handle closed. */
static inline void mt_drive_away(struct mt_env *e, int i)
{
    char away[700];
    snprintf(away, sizeof(away), "%s.away", e->drive[i]);
    if (rename(e->drive[i], away) != 0)
        abort();
    int fd = open(e->drive[i], O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        abort();
    close(fd);
}

static inline void mt_drive_back(struct mt_env *e, int i)
{
    char away[700];
    snprintf(away, sizeof(away), "%s.away", e->drive[i]);
    if (unlink(e->drive[i]) != 0 || rename(away, e->drive[i]) != 0)
        abort();
}

/* Reopen the meta handle (the set stays open) with options o. */
static inline int mt_reopen_opts(struct mt_env *e, const struct strata_meta_opts *o)
{
    strata_meta_close(e->m);
    struct strata_errinfo ei;
    memset(&ei, 0, sizeof(ei));
    return strata_meta_open(&e->set, 1, o, &e->m, &ei);
}

/* Reopen the meta handle with a smaller multipart part_size_min. */
static inline int mt_reopen_part_min(struct mt_env *e, size_t part_size_min)
{
    struct strata_meta_opts o;
    memset(&o, 0, sizeof(o));
    o.part_size_min = part_size_min;
    return mt_reopen_opts(e, &o);
}

/* Fresh drive directories for test name; opens set and meta. */
/* A set of MT_DRIVES drives with parity drives (0: the default). */
static inline struct mt_env *mt_setup_parity(const char *name, unsigned parity)
{
    static unsigned seq; /* per process */
    struct mt_env *e = calloc(1, sizeof(*e));
    e->parity = parity;
    const char *tmp = getenv("STRATA_TEST_TMPDIR");
    if (!tmp)
        tmp = "/tmp";
    snprintf(e->root, sizeof(e->root), "%s/meta-%s-%d-%u", tmp, name, (int)getpid(), seq++);
    mt_rm_rf(e->root);
    mkdir(e->root, 0755);
    for (int i = 0; i < MT_DRIVES; i++) {
        snprintf(e->drive[i], sizeof(e->drive[i]), "%s/d%d", e->root, i);
        mkdir(e->drive[i], 0755);
        e->paths[i] = e->drive[i];
    }
    if (mt_open(e) != 0) {
        free(e);
        return NULL;
    }
    return e;
}

static inline struct mt_env *mt_setup(const char *name)
{
    return mt_setup_parity(name, 0);
}

static inline void mt_teardown(struct mt_env *e)
{
    if (!e)
        return;
    mt_close(e);
    mt_rm_rf(e->root);
    free(e);
}

static inline int mt_bucket(struct mt_env *e, const char *name, int versioning)
{
    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "%s", name);
    snprintf(b.owner, sizeof(b.owner), "tester");
    snprintf(b.region, sizeof(b.region), "us-east-1");
    b.created_ms = 1700000000000LL;
    int rc = strata_meta_bucket_create(e->m, &b);
    if (rc == 0 && versioning)
        rc = strata_meta_bucket_set_versioning(e->m, name, versioning);
    return rc;
}

static inline void mt_fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

/* Put len bytes in chunks of chunk (0: one write), size announced or not. */
static inline int mt_put_opts(struct mt_env *e, struct strata_put_opts *o, const void *data, size_t len,
                       size_t chunk, struct strata_obj_info *out)
{
    struct strata_put *p;
    int rc = strata_obj_put_begin(e->m, o, &p);
    if (rc)
        return rc;
    if (!chunk)
        chunk = len ? len : 1;
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        rc = strata_obj_put_write(p, (const uint8_t *)data + off, n);
        if (rc) {
            strata_obj_put_abort(p);
            return rc;
        }
    }
    return strata_obj_put_commit(p, out);
}

static inline int mt_put(struct mt_env *e, const char *bucket, const char *key, const void *data,
                  size_t len, struct strata_obj_info *out)
{
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = bucket;
    o.key = key;
    o.size = len;
    return mt_put_opts(e, &o, data, len, 0, out);
}

/* Read the whole object into a malloc'ed buffer. */
static inline int mt_get(struct mt_env *e, const char *bucket, const char *key, const char *vid,
                  uint8_t **data, size_t *len)
{
    struct strata_obj_info info;
    struct strata_get *g;
    int rc = strata_obj_get_open(e->m, bucket, key, vid, &info, &g);
    if (rc) {
        strata_obj_info_fini(&info);
        return rc;
    }
    *len = info.size;
    *data = malloc(info.size + 1);
    rc = strata_obj_get_read(g, 0, *data, info.size);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    if (rc) {
        free(*data);
        *data = NULL;
    }
    return rc;
}

/* Regular files under dir, recursively. */
static inline int mt_count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char p[4096];
        int pl = snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        if (pl < 0 || (size_t)pl >= sizeof(p))
            continue;
        struct stat st;
        if (lstat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            n += mt_count_files(p);
        else
            n++;
    }
    closedir(d);
    return n;
}

/* Data and tmp files over all drives. */
static inline int mt_data_files(struct mt_env *e)
{
    int n = 0;
    for (int i = 0; i < MT_DRIVES; i++) {
        char p[700];
        snprintf(p, sizeof(p), "%s/data", e->drive[i]);
        n += mt_count_files(p);
        snprintf(p, sizeof(p), "%s/tmp", e->drive[i]);
        n += mt_count_files(p);
    }
    return n;
}

/* A one-part multipart upload of data with the options mo, completed
 * (under version_id, a replica's, unless NULL); out (may be NULL) receives
 * the version.  Returns the first failure. */
/* Upload part part_no of upload uid: data in one write; *part its info. */
static inline int mt_part_upload(struct strata_meta *m, const char *bucket, const char *key,
                                 const char *uid, unsigned part_no, const void *data, size_t len,
                                 struct strata_obj_info *part)
{
    struct strata_part_opts po;
    memset(&po, 0, sizeof(po));
    po.bucket = bucket;
    po.key = key;
    po.upload_id = uid;
    po.part_number = part_no;
    po.size = len;
    struct strata_put *p;
    int rc = strata_mpu_part_begin(m, &po, &p);
    if (rc)
        return rc;
    if ((rc = strata_obj_put_write(p, data, len))) {
        strata_obj_put_abort(p);
        return rc;
    }
    return strata_obj_put_commit(p, part);
}

static inline int mt_mpu_single_as(struct strata_meta *m, const struct strata_mpu_opts *mo,
                                   const char *version_id, const void *data, size_t len,
                                   struct strata_obj_info *out)
{
    char uid[STRATA_UPLOAD_ID_MAX + 1];
    int rc = strata_mpu_create(m, mo, uid);
    if (rc)
        return rc;
    struct strata_obj_info part;
    if ((rc = mt_part_upload(m, mo->bucket, mo->key, uid, 1, data, len, &part)))
        return rc;
    struct strata_mpu_part mp = {1, part.etag, NULL, 0};
    struct strata_mpu_complete_opts co = {mo->bucket, mo->key, uid, &mp,  1,   NULL,
                                          false,      false,   0,   NULL, NULL};
    rc = strata_mpu_complete_as(m, &co, version_id, out);
    strata_obj_info_fini(&part);
    return rc;
}

static inline int mt_mpu_single(struct strata_meta *m, const struct strata_mpu_opts *mo,
                                const void *data, size_t len, struct strata_obj_info *out)
{
    return mt_mpu_single_as(m, mo, NULL, data, len, out);
}

/* The same with default options for bucket/key. */
static inline int mt_mpu_plain(struct strata_meta *m, const char *bucket, const char *key,
                               const char *version_id, const void *data, size_t len,
                               struct strata_obj_info *out)
{
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = bucket;
    mo.key = key;
    return mt_mpu_single_as(m, &mo, version_id, data, len, out);
}

/*
 * Kill tests: fork; the child runs child(ud, fd), which writes one byte to
 * fd when it is ready, then ack_size bytes (at most 64) per acknowledged
 * step, and never returns.  The parent waits for the ready byte, sleeps a
 * random time in [min_delay_us, max_delay_us), SIGKILLs the child and
 * hands each ack it sent to ack_cb(ack_ud, ack), in order.  Returns -1
 * (with a message on stderr) when the child could not start or exited by
 * itself.
 */
static inline int mt_run_and_kill_acks(void (*child)(void *ud, int fd), void *ud,
                                       unsigned min_delay_us, unsigned max_delay_us,
                                       size_t ack_size, void (*ack_cb)(void *ack_ud, const void *ack),
                                       void *ack_ud)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(pfd[0]);
        child(ud, pfd[1]);
        _exit(7);
    }
    close(pfd[1]);
    char c, ack[64];
    int rc = read(pfd[0], &c, 1) == 1 ? 0 : -1;
    unsigned span = max_delay_us > min_delay_us ? max_delay_us - min_delay_us : 1;
    usleep((useconds_t)(min_delay_us + (unsigned)rand() % span));
    kill(pid, SIGKILL);
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFSIGNALED(st)) {
        fprintf(stderr, "child exited by itself with status %d\n", WEXITSTATUS(st));
        rc = -1;
    }
    while (ack_size <= sizeof(ack) && read(pfd[0], ack, ack_size) == (ssize_t)ack_size)
        ack_cb(ack_ud, ack);
    close(pfd[0]);
    return rc;
}

struct mt_last_ack {
    void *last;
    size_t size;
};

static inline void mt_last_ack_cb(void *ud, const void *ack)
{
    struct mt_last_ack *l = ud;
    memcpy(l->last, ack, l->size);
}

/* The same, copying the child's last ack into last (left alone when there
 * was none); the delay below max_delay_us. */
static inline int mt_run_and_kill(void (*child)(void *ud, int fd), void *ud,
                                  unsigned max_delay_us, void *last, size_t ack_size)
{
    struct mt_last_ack l = {last, ack_size};
    return mt_run_and_kill_acks(child, ud, 0, max_delay_us, ack_size, mt_last_ack_cb, &l);
}

#endif /* STRATA_TESTS_META_TEST_UTIL_H */
