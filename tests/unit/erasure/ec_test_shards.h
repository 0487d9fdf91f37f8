/*
 * ec_test_shards.h - cmocka helpers shared by the erasure tests that work
 * on shard files: open a set (failing the test with erasure/'s message),
 * write and read whole objects, find a drive's or a shard index's file,
 * flip a byte on the drive.  Include after cmocka.h and ec_test_util.h.
 */
#ifndef STRATA_TESTS_EC_TEST_SHARDS_H
#define STRATA_TESTS_EC_TEST_SHARDS_H

#include <fcntl.h>

#include "strata/erasure.h"

static inline struct strata_set *ect_set_open(struct ect_drives *d,
                                              const struct strata_set_opts *o)
{
    struct strata_set *s = NULL;
    struct strata_errinfo ei;
    int rc = strata_set_open(d->ptr, d->n, o, &s, &ei);
    if (rc != 0)
        fprintf(stderr, "set open: %s\n", ei.msg);
    assert_int_equal(rc, 0);
    return s;
}

/* Write size bytes in one piece; the mask of drives that took them. */
static inline uint32_t ect_put(struct strata_set *set, const uint8_t *id, const uint8_t *data,
                               size_t size)
{
    struct strata_ec_writer *w;
    assert_int_equal(strata_ec_writer_create(set, id, &w), 0);
    assert_int_equal(strata_ec_writer_write(w, data, size), 0);
    uint32_t mask = 0;
    assert_int_equal(strata_ec_writer_finish(w, &mask), 0);
    strata_ec_writer_destroy(w);
    return mask;
}

/* Read the whole object in one call; 0 or the reader's error. */
static inline int ect_get(struct strata_set *set, const uint8_t *id, uint8_t *out, size_t size)
{
    struct strata_ec_reader *r;
    int rc = strata_ec_reader_open(set, id, size, &r);
    if (rc == 0)
        rc = strata_ec_reader_read(r, 0, out, size);
    strata_ec_reader_close(r);
    return rc;
}

/* Path of drive's shard file of id (whether or not it exists). */
static inline void ect_drive_file(const struct ect_drives *d, unsigned drive, const uint8_t *id,
                                  char *out, size_t cap)
{
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", id[i]);
    snprintf(out, cap, "%s/data/%.2s/%s", d->path[drive], hex, hex);
}

/* The shard index a file's header names, or -1 when it cannot be read. */
static inline int ect_shard_index_of(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    uint8_t h[36];
    ssize_t n = pread(fd, h, sizeof(h), 0);
    close(fd);
    if (n != (ssize_t)sizeof(h))
        return -1;
    return (int)(h[32] | h[33] << 8 | h[34] << 16 | (uint32_t)h[35] << 24);
}

/* The drive holding shard index `shard` of id (from the headers). */
static inline unsigned ect_drive_of_shard(const struct ect_drives *d, const uint8_t *id,
                                          int shard)
{
    char p[4200];
    for (unsigned dr = 0; dr < d->n; dr++) {
        ect_drive_file(d, dr, id, p, sizeof(p));
        if (ect_shard_index_of(p) == shard)
            return dr;
    }
    fail_msg("shard %d not found", shard);
    return 0;
}

/* Path of the file holding shard index `shard` of id. */
static inline void ect_shard_file(const struct ect_drives *d, const uint8_t *id, unsigned shard,
                                  char *out, size_t cap)
{
    ect_drive_file(d, ect_drive_of_shard(d, id, (int)shard), id, out, cap);
}

/* Flip the bits of one byte of a file, as rot on the drive would. */
static inline void ect_flip(const char *path, off_t off)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, off), 1);
    c ^= 0x5a;
    assert_int_equal(pwrite(fd, &c, 1, off), 1);
    close(fd);
}

#endif
