/*
 * test_s3_client_live.c - the S3 client (server/remote/s3_client.c) against
 * a real strata daemon on loopback: the strata binary next to this test
 * (the build directory), started on a free port with four scratch drives
 * (skipped, 77, when there is no binary).
 *
 * Every request of s3_client.h once: CreateBucket (with Object Lock),
 * PutObject streamed from a callback with Content-MD5 and user metadata
 * (and a Content-MD5 that does not match: 400 BadDigest, OTHER), HeadObject
 * (size, ETag, metadata), ranged and whole GetObject streamed to a
 * callback (a callback that stops: OTHER), CopyObject (metadata copied and
 * replaced), PutObjectRetention and PutObjectLegalHold (seen by HEAD),
 * GetObjectLockConfiguration on a lock and a plain bucket, DeleteObject
 * (of a locked version: AUTH 403), 404s as NOT_FOUND with their S3 code,
 * wrong keys as AUTH, a stopped daemon as RETRY.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "s3_client.h"

#define AK "AKLIVECLIENT"
#define SK "live-client-secret/123"

static pid_t daemon_pid = -1;
static char dir[512], endpoint[64];

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &l) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static struct strata_s3c *client(const char *sk)
{
    struct strata_s3c *c = NULL;
    char err[256];
    struct strata_s3c_opts o = {.access_key = AK, .secret_key = sk, .request_timeout_ms = 5000};
    assert_int_equal(strata_s3c_create(endpoint, &o, &c, err, sizeof(err)), 0);
    return c;
}

static int setup(void **state)
{
    (void)state;
    char self[512], bin[600];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return -1;
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(bin, sizeof(bin), "%s/strata", self);
    if (access(bin, X_OK) != 0) {
        fprintf(stderr, "no strata binary at %s: skipped\n", bin);
        exit(77);
    }
    const char *base = getenv("STRATA_TEST_TMPDIR");
    snprintf(dir, sizeof(dir), "%s/s3c-live-XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(dir))
        return -1;
    char drives[4][600], addr[64], logp[600];
    for (int i = 0; i < 4; i++) {
        snprintf(drives[i], sizeof(drives[i]), "%s/d%d", dir, i);
        mkdir(drives[i], 0755);
    }
    int port = free_port();
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%d", port);
    snprintf(logp, sizeof(logp), "%s/strata.log", dir);
    daemon_pid = fork();
    if (daemon_pid == 0) {
        FILE *lf = freopen(logp, "w", stdout);
        (void)lf;
        dup2(1, 2);
        setenv("STRATA_ROOT_USER", AK, 1);
        setenv("STRATA_ROOT_PASSWORD", SK, 1);
        execl(bin, bin, "server", "--address", addr, drives[0], drives[1], drives[2], drives[3],
              (char *)NULL);
        _exit(127);
    }
    /* Ready when a HEAD of a bucket gets an answer (404) instead of none. */
    struct strata_s3c *c = client(SK);
    enum strata_s3c_result r = STRATA_S3C_RETRY;
    for (int i = 0; i < 300 && r == STRATA_S3C_RETRY; i++) {
        struct strata_s3c_error e;
        r = strata_s3c_head_bucket(c, "nobucket", &e);
        if (r == STRATA_S3C_RETRY)
            usleep(100 * 1000);
    }
    strata_s3c_destroy(c);
    return r == STRATA_S3C_NOT_FOUND ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (daemon_pid > 0) {
        kill(daemon_pid, SIGTERM);
        waitpid(daemon_pid, NULL, 0);
    }
    /* A sanitizer build's daemon reports into its log. */
    char logp[600], line[1024];
    snprintf(logp, sizeof(logp), "%s/strata.log", dir);
    FILE *f = fopen(logp, "r");
    bool bad = false;
    while (f && fgets(line, sizeof(line), f))
        bad |= strstr(line, "ERROR: AddressSanitizer") || strstr(line, "runtime error:") ||
               strstr(line, "ERROR: LeakSanitizer");
    if (f)
        fclose(f);
    if (bad) {
        fprintf(stderr, "sanitizer report in %s (kept)\n", logp);
        return -1;
    }
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- callbacks ---- */

struct src {
    const uint8_t *p;
    size_t n, off;
};

static int src_read(void *ud, void *buf, size_t max, size_t *n)
{
    struct src *s = ud;
    size_t k = s->n - s->off < max ? s->n - s->off : max;
    k = k < 7000 ? k : 7000; /* many small reads */
    memcpy(buf, s->p + s->off, k);
    s->off += k;
    *n = k;
    return 0;
}

static int src_rewind(void *ud)
{
    ((struct src *)ud)->off = 0;
    return 0;
}

struct dst {
    uint8_t *p;
    size_t n, max;
    size_t stop_after; /* 0: never stop */
};

static int dst_write(void *ud, const void *buf, size_t len)
{
    struct dst *d = ud;
    if (d->stop_after && d->n >= d->stop_after)
        return -1;
    if (len > d->max - d->n)
        return -1;
    memcpy(d->p + d->n, buf, len);
    d->n += len;
    return 0;
}

static uint8_t *pattern(size_t n)
{
    uint8_t *b = malloc(n);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 131 + (i >> 9));
    return b;
}

static bool has_meta(const struct strata_s3c_obj *o, const char *line)
{
    for (size_t i = 0; i < o->nmeta; i++)
        if (strcmp(o->meta[i], line) == 0)
            return true;
    return false;
}

static void test_objects(void **state)
{
    (void)state;
    struct strata_s3c *c = client(SK);
    struct strata_s3c_error e;
    struct strata_s3c_obj info;
    assert_int_equal(strata_s3c_create_bucket(c, "live", false, &e), STRATA_S3C_OK);
    assert_int_equal(strata_s3c_head_bucket(c, "live", &e), STRATA_S3C_OK);

    size_t n = 3 * 1024 * 1024 + 17;
    uint8_t *data = pattern(n), md5[16];
    unsigned ml;
    EVP_Digest(data, n, md5, &ml, EVP_md5(), NULL);
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", md5[i]);
    struct src s = {.p = data, .n = n};
    const char *hdrs[] = {"x-amz-meta-Color: Blue", "Content-Type: application/x-live", NULL};
    struct strata_s3c_put p = {.bucket = "live", .key = "dir/a b+c", .size = n, .md5 = md5,
                               .headers = hdrs, .read_cb = src_read, .rewind_cb = src_rewind,
                               .ud = &s};
    assert_int_equal(strata_s3c_put_object(c, &p, &info, &e), STRATA_S3C_OK);
    assert_string_equal(info.etag, hex);
    strata_s3c_obj_fini(&info);

    /* A Content-MD5 the bytes do not have: the remote refuses them. */
    uint8_t bad[16];
    memcpy(bad, md5, 16);
    bad[0] ^= 1;
    s.off = 0;
    p.md5 = bad;
    p.key = "bad";
    assert_int_equal(strata_s3c_put_object(c, &p, NULL, &e), STRATA_S3C_OTHER);
    assert_int_equal(e.http_status, 400);
    assert_string_equal(e.code, "BadDigest");
    assert_int_equal(strata_s3c_head_object(c, "live", "bad", NULL, &info, &e),
                     STRATA_S3C_NOT_FOUND);
    strata_s3c_obj_fini(&info);

    assert_int_equal(strata_s3c_head_object(c, "live", "dir/a b+c", NULL, &info, &e),
                     STRATA_S3C_OK);
    assert_int_equal(info.size, n);
    assert_string_equal(info.etag, hex);
    assert_true(has_meta(&info, "x-amz-meta-color: Blue"));
    assert_true(info.last_modified[0]);
    strata_s3c_obj_fini(&info);

    /* Whole and ranged GETs. */
    uint8_t *got = malloc(n);
    struct dst d = {.p = got, .max = n};
    assert_int_equal(strata_s3c_get_object(c, "live", "dir/a b+c", NULL, 0, 0, dst_write, &d,
                                           &info, &e),
                     STRATA_S3C_OK);
    assert_int_equal(d.n, n);
    assert_memory_equal(got, data, n);
    assert_int_equal(info.size, n);
    strata_s3c_obj_fini(&info);
    d.n = 0;
    assert_int_equal(strata_s3c_get_object(c, "live", "dir/a b+c", NULL, 1000000, 4096, dst_write,
                                           &d, &info, &e),
                     STRATA_S3C_OK);
    assert_int_equal(d.n, 4096);
    assert_memory_equal(got, data + 1000000, 4096);
    assert_int_equal(info.size, n); /* the whole object's, from Content-Range */
    strata_s3c_obj_fini(&info);
    d.n = 0;
    assert_int_equal(strata_s3c_get_object(c, "live", "dir/a b+c", NULL, n - 5, 0, dst_write, &d,
                                           NULL, &e),
                     STRATA_S3C_OK);
    assert_int_equal(d.n, 5);
    assert_memory_equal(got, data + n - 5, 5);
    /* A callback that stops the transfer. */
    d.n = 0;
    d.stop_after = 1;
    assert_int_equal(strata_s3c_get_object(c, "live", "dir/a b+c", NULL, 0, 0, dst_write, &d,
                                           NULL, &e),
                     STRATA_S3C_OTHER);
    d.stop_after = 0;
    /* 404 with its code, into e, never into the callback. */
    d.n = 0;
    assert_int_equal(strata_s3c_get_object(c, "live", "nope", NULL, 0, 0, dst_write, &d, NULL, &e),
                     STRATA_S3C_NOT_FOUND);
    assert_int_equal(d.n, 0);
    assert_int_equal(e.http_status, 404);
    assert_string_equal(e.code, "NoSuchKey");
    assert_int_equal(strata_s3c_get_object(c, "nobucket", "k", NULL, 0, 0, dst_write, &d, NULL, &e),
                     STRATA_S3C_NOT_FOUND);
    assert_string_equal(e.code, "NoSuchBucket");

    /* CopyObject: metadata copied, then replaced. */
    assert_int_equal(strata_s3c_copy_object(c, "live", "dir/a b+c", "live", "copy1", NULL, &info,
                                            &e),
                     STRATA_S3C_OK);
    assert_string_equal(info.etag, hex);
    strata_s3c_obj_fini(&info);
    assert_int_equal(strata_s3c_head_object(c, "live", "copy1", NULL, &info, &e), STRATA_S3C_OK);
    assert_true(has_meta(&info, "x-amz-meta-color: Blue"));
    strata_s3c_obj_fini(&info);
    const char *repl[] = {"x-amz-meta-shape: round", NULL};
    assert_int_equal(strata_s3c_copy_object(c, "live", "dir/a b+c", "live", "copy2", repl, NULL,
                                            &e),
                     STRATA_S3C_OK);
    assert_int_equal(strata_s3c_head_object(c, "live", "copy2", NULL, &info, &e), STRATA_S3C_OK);
    assert_true(has_meta(&info, "x-amz-meta-shape: round"));
    assert_false(has_meta(&info, "x-amz-meta-color: Blue"));
    assert_int_equal(info.size, n);
    strata_s3c_obj_fini(&info);
    assert_int_equal(strata_s3c_copy_object(c, "live", "nope", "live", "copy3", NULL, NULL, &e),
                     STRATA_S3C_NOT_FOUND);

    /* Delete: gone, and again (S3 answers 204 for an absent key). */
    assert_int_equal(strata_s3c_delete_object(c, "live", "copy1", NULL, NULL, &e), STRATA_S3C_OK);
    assert_int_equal(strata_s3c_head_object(c, "live", "copy1", NULL, &info, &e),
                     STRATA_S3C_NOT_FOUND);
    strata_s3c_obj_fini(&info);
    assert_int_equal(strata_s3c_delete_object(c, "live", "copy1", NULL, NULL, &e), STRATA_S3C_OK);

    /* Object Lock state of a plain bucket. */
    bool en = true;
    assert_int_equal(strata_s3c_lock_enabled(c, "live", &en, &e), STRATA_S3C_OK);
    assert_false(en);
    free(got);
    free(data);
    strata_s3c_destroy(c);
}

static void test_lock(void **state)
{
    (void)state;
    struct strata_s3c *c = client(SK);
    struct strata_s3c_error e;
    struct strata_s3c_obj info;
    assert_int_equal(strata_s3c_create_bucket(c, "locked", true, &e), STRATA_S3C_OK);
    bool en = false;
    assert_int_equal(strata_s3c_lock_enabled(c, "locked", &en, &e), STRATA_S3C_OK);
    assert_true(en);
    uint8_t body[100] = {1, 2, 3};
    struct src s = {.p = body, .n = sizeof(body)};
    struct strata_s3c_put p = {.bucket = "locked", .key = "k", .size = sizeof(body),
                               .read_cb = src_read, .ud = &s};
    assert_int_equal(strata_s3c_put_object(c, &p, &info, &e), STRATA_S3C_OK);
    char vid[160];
    snprintf(vid, sizeof(vid), "%s", info.version_id);
    assert_true(vid[0]);
    strata_s3c_obj_fini(&info);
    char until[40];
    time_t t = time(NULL) + 3600;
    strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    assert_int_equal(strata_s3c_put_retention(c, "locked", "k", vid, "COMPLIANCE", until, NULL, &e),
                     STRATA_S3C_OK);
    assert_int_equal(strata_s3c_put_legal_hold(c, "locked", "k", vid, true, NULL, &e),
                     STRATA_S3C_OK);
    assert_int_equal(strata_s3c_head_object(c, "locked", "k", vid, &info, &e), STRATA_S3C_OK);
    assert_string_equal(info.lock_mode, "COMPLIANCE");
    assert_memory_equal(info.lock_until, until, 19); /* the date and time; then .000Z */
    assert_string_equal(info.legal_hold, "ON");
    assert_string_equal(info.version_id, vid);
    strata_s3c_obj_fini(&info);
    /* The remote keeps it: a delete of the version is refused. */
    assert_int_equal(strata_s3c_delete_object(c, "locked", "k", vid, NULL, &e), STRATA_S3C_AUTH);
    assert_int_equal(e.http_status, 403);
    assert_string_equal(e.code, "AccessDenied");
    /* A shorter retention in COMPLIANCE mode is refused too. */
    assert_int_equal(strata_s3c_put_retention(c, "locked", "k", vid, "COMPLIANCE",
                                              "2000-01-01T00:00:00Z", NULL, &e),
                     STRATA_S3C_OTHER);
    assert_int_equal(e.http_status, 400);
    assert_int_equal(strata_s3c_put_legal_hold(c, "locked", "k", vid, false, NULL, &e),
                     STRATA_S3C_OK);
    strata_s3c_destroy(c);
}

static void test_faults(void **state)
{
    (void)state;
    struct strata_s3c *c = client("a wrong secret");
    struct strata_s3c_error e;
    struct strata_s3c_obj info;
    assert_int_equal(strata_s3c_head_bucket(c, "live", &e), STRATA_S3C_AUTH);
    assert_int_equal(e.http_status, 403);
    assert_int_equal(strata_s3c_get_object(c, "live", "dir/a b+c", NULL, 0, 0, NULL, NULL, NULL,
                                           &e),
                     STRATA_S3C_AUTH);
    assert_string_equal(e.code, "SignatureDoesNotMatch");
    strata_s3c_destroy(c);
    /* The daemon stopped: no answer is RETRY. */
    kill(daemon_pid, SIGTERM);
    waitpid(daemon_pid, NULL, 0);
    daemon_pid = -1;
    c = client(SK);
    assert_int_equal(strata_s3c_head_object(c, "live", "dir/a b+c", NULL, &info, &e),
                     STRATA_S3C_RETRY);
    assert_int_equal(e.http_status, 0);
    assert_true(e.message[0]);
    strata_s3c_obj_fini(&info);
    strata_s3c_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_objects),
        cmocka_unit_test(test_lock),
        cmocka_unit_test(test_faults),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
