/*
 * shard.c - shard files: the header codec, the streaming writer (encode and
 * fan each stripe out to all drives with io_uring), the streaming reader
 * (read K shards, verify CRC32C, rebuild from parity), heal, delete and
 * inline (in-record) shards.
 *
 * Shard file layout (format versions 1 and 2; all integers little endian):
 *
 *   OFFSET                 SIZE              DESCRIPTION
 *   0                      8                 magic "STRATASH"
 *   8                      4                 format version (the deployment's, 1 or 2)
 *   12                     4                 header size (4096)
 *   16                     16                data id
 *   32                     4                 shard index (0..K-1 data, K.. parity)
 *   36                     4                 K
 *   40                     4                 M
 *   44                     4                 reserved, 0
 *   48                     8                 block size (object bytes per stripe)
 *   56                     8                 shard size (bytes per shard block)
 *   64                     8                 object size in bytes
 *   72                     8                 block count B = ceil(object size / (K*shard size))
 *   80                     4                 CRC32C of the B*4 bytes of the CRC table
 *   84                     4                 CRC32C of header bytes 0..83
 *   88                     4008              zero
 *   4096                   BB                shard blocks: B-1 of shard size, then the last
 *                                            stripe's block (see below), zero padded
 *   4096 + BB              B*4 rounded up    CRC32C of each block (u32 LE), zero padded to 4096
 *
 * BB is the blocks' bytes.  Version 1: every block is shard size bytes,
 * BB = B * shard size.  Version 2: the last stripe's block holds only
 * ceil(rest / K) bytes rounded up to 4096, where rest is the object bytes
 * in that stripe, so small objects are not padded to a whole stripe.  The
 * stripe's K data blocks still hold its bytes in order, so a stripe buffer
 * with blocks of that length at i * length holds the object bytes
 * contiguously, as with full stripes.
 *
 * The header is written last (linked after the table write, then fsync,
 * then rename from tmp/ into data/<hh>/), so a file in data/ with a valid
 * header is complete.  Every offset and length is a multiple of 4096 so the
 * same file works with O_DIRECT.
 *
 * Threads: a writer or reader is used by one thread at a time; each
 * borrows its own io context (ring and stripe buffers) from the set's pool.
 * A writer with an observer also has that context's helper thread read its
 * full stripe buffers (observe.c); the writer waits for it before reusing
 * a buffer.  heal/delete/inline functions may run on any thread.
 */
#include "ec_internal.h"
#include "strata/hex.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static const char shard_magic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'S', 'H'};

/* ---- little-endian helpers and the header codec -------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

void strata_ec__hdr_encode(const struct strata_ec__hdr *h, uint8_t out[STRATA_EC_HDR_SIZE])
{
    memset(out, 0, STRATA_EC_HDR_SIZE);
    memcpy(out, shard_magic, 8);
    put32(out + 8, h->version);
    put32(out + 12, STRATA_EC_HDR_SIZE);
    memcpy(out + 16, h->data_id, STRATA_DATA_ID_LEN);
    put32(out + 32, h->shard_index);
    put32(out + 36, h->k);
    put32(out + 40, h->m);
    put64(out + 48, h->block_size);
    put64(out + 56, h->shard_size);
    put64(out + 64, h->object_size);
    put64(out + 72, h->block_count);
    put32(out + 80, h->table_crc);
    put32(out + 84, strata_crc32c(0, out, 84));
}

/* Shard s's CRC table (crc, nblocks entries) into tb and its header,
 * naming the table's CRC, into hdr: the tail a writer or a heal puts on
 * the shard of an object of size bytes. */
static void shard_tail_make(const struct strata_set *set, unsigned s, const uint8_t *id,
                            uint64_t size, uint64_t nblocks, const uint32_t *crc, uint8_t *tb,
                            uint8_t hdr[STRATA_EC_HDR_SIZE])
{
    for (uint64_t b = 0; b < nblocks; b++)
        put32(tb + b * 4, crc[b]);
    struct strata_ec__hdr h = {
        .version = set->layout,
        .shard_index = s,
        .k = set->k,
        .m = set->m,
        .block_size = set->block_size,
        .shard_size = set->shard_size,
        .object_size = size,
        .block_count = nblocks,
        .table_crc = strata_crc32c(0, tb, (size_t)nblocks * 4),
    };
    memcpy(h.data_id, id, STRATA_DATA_ID_LEN);
    strata_ec__hdr_encode(&h, hdr);
}

int strata_ec__hdr_decode(const uint8_t in[STRATA_EC_HDR_SIZE], struct strata_ec__hdr *h)
{
    if (memcmp(in, shard_magic, 8) != 0 || get32(in + 84) != strata_crc32c(0, in, 84))
        return STRATA_ECORRUPT;
    h->version = get32(in + 8);
    if (h->version < STRATA_FORMAT_VERSION_MIN || h->version > STRATA_FORMAT_VERSION ||
        get32(in + 12) != STRATA_EC_HDR_SIZE)
        return STRATA_EFORMAT;
    memcpy(h->data_id, in + 16, STRATA_DATA_ID_LEN);
    h->shard_index = get32(in + 32);
    h->k = get32(in + 36);
    h->m = get32(in + 40);
    h->block_size = get64(in + 48);
    h->shard_size = get64(in + 56);
    h->object_size = get64(in + 64);
    h->block_count = get64(in + 72);
    h->table_crc = get32(in + 80);
    return 0;
}

static uint64_t blocks_for(const struct strata_set *set, uint64_t size)
{
    uint64_t stripe = (uint64_t)set->shard_size * set->k;
    return (size + stripe - 1) / stripe;
}

/* Bytes of shard block idx (every shard's block of stripe idx is as long)
 * of an object of size bytes: shard_size, except for the last stripe of a
 * version 2 deployment, which is only as long as its bytes need. */
static size_t block_len(const struct strata_set *set, uint64_t size, uint64_t idx)
{
    uint64_t stripe = (uint64_t)set->shard_size * set->k;
    if (set->layout < 2 || (idx + 1) * stripe <= size)
        return set->shard_size;
    uint64_t rest = size > idx * stripe ? size - idx * stripe : 0;
    return strata_ec__round_up((size_t)((rest + set->k - 1) / set->k), STRATA_EC_ALIGN);
}

/* Bytes of all blocks of a shard file: where its CRC table starts, after
 * the header. */
static uint64_t blocks_bytes(const struct strata_set *set, uint64_t size, uint64_t blocks)
{
    return blocks ? (blocks - 1) * set->shard_size + block_len(set, size, blocks - 1) : 0;
}

static size_t table_bytes(uint64_t blocks)
{
    return strata_ec__round_up((size_t)blocks * 4, STRATA_EC_ALIGN);
}

static int tmp_path_new(const struct strata_set *set, unsigned drive, const uint8_t *id,
                        const char *tag, unsigned shard, char **out)
{
    char hex[2 * STRATA_DATA_ID_LEN + 1], rnd[17];
    uint8_t r[STRATA_DATA_ID_LEN];
    strata_hex_encode(id, STRATA_DATA_ID_LEN, hex);
    strata_data_id_new(r);
    strata_hex_encode(r, 8, rnd);
    if (asprintf(out, "%s/tmp/%s.%s%u.%s", set->drives[drive].path, hex, tag, shard, rnd) < 0)
        return STRATA_ENOMEM;
    return 0;
}

int strata_ec__tmp_create(const char *path, int flags)
{
    int fd = open(path, flags | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    /* A new file nobody else has open: the lock is ours at once (on a
     * file system without flock, reclaim goes by age alone). */
    if (fd >= 0)
        (void)flock(fd, LOCK_EX | LOCK_NB);
    return fd;
}

/* Create data/<hh>/ on first use.  data/ itself must exist: a drive whose
 * tree was removed while running stays missing for writers.  The new
 * directory entry is made durable by fsyncing data/. */
static int subdir_make(const struct strata_set *set, unsigned d, const char *subdir)
{
    if (mkdir(subdir, 0755) < 0 && errno != EEXIST)
        return -errno;
    if (set->no_fsync)
        return 0;
    char p[4096];
    snprintf(p, sizeof(p), "%s/data", set->drives[d].path);
    return strata_ec__dir_fsync(p);
}

/* ---- writer -------------------------------------------------------------- */

/*
 * user_data of a writer's operations: bits 16.. the stripe slot, or UD_CTL
 * for the finish chain; bits 8..15 the step of that chain; bits 0..7 the
 * drive.
 */
#define UD_CTL 0xffu
enum { ST_DATA, ST_TAB, ST_HDR, ST_FSYNC, ST_RENAME, ST_DIRSYNC };

static uint64_t ud_make(unsigned slot, unsigned step, unsigned d)
{
    return (uint64_t)slot << 16 | (uint64_t)step << 8 | d;
}

struct strata_ec_writer {
    struct strata_set *set;
    uint8_t id[STRATA_DATA_ID_LEN];
    struct strata_ec__io *io;
    int fd[STRATA_DRIVES_MAX];     /* by drive */
    char *tmp[STRATA_DRIVES_MAX];  /* by drive */
    uint32_t *crc[STRATA_DRIVES_MAX]; /* by shard index: CRC32C of each block */
    uint32_t alive;                /* drives still taking writes */
    unsigned n_nospc, n_other;     /* why drives were dropped */
    uint64_t cap, blocks, size;
    size_t fill;
    size_t enc_len;                        /* block length of the stripe last encoded */
    unsigned cur;                          /* stripe slot being filled */
    unsigned pending[STRATA_EC_NBUF];      /* shard writes in flight per slot */
    uint64_t t_sub_ns[STRATA_EC_NBUF];     /* when the slot's writes were submitted */
    uint64_t ticket[STRATA_EC_NBUF];       /* observer ticket of the slot's bytes; 0 none */
    uint64_t ticket_last;                  /* newest ticket this writer posted */
    uint64_t expect_len;                   /* shard file length expect announced; 0 none */
    uint64_t alloc_len;                    /* shard file length allocated so far */
    strata_ec_observe_cb obs_cb;           /* NULL: not observed */
    void *obs_ud;
    bool finished;
    int err; /* sticky: once failed, every call returns it */
};

static void w_drop(struct strata_ec_writer *w, unsigned d, int sys_err)
{
    if (!(w->alive & (1u << d)))
        return;
    w->alive &= ~(1u << d);
    if (sys_err == ENOSPC || sys_err == EDQUOT)
        w->n_nospc++;
    else
        w->n_other++;
    if (w->fd[d] >= 0) {
        close(w->fd[d]); /* io_uring holds its own file reference for in-flight ops */
        w->fd[d] = -1;
    }
    if (w->tmp[d]) {
        unlink(w->tmp[d]);
        STRATA_FREE(w->tmp[d]);
    }
}

static int w_quorum_err(const struct strata_ec_writer *w)
{
    if ((unsigned)__builtin_popcount(w->alive) >= strata_set_write_quorum(w->set))
        return 0;
    return w->n_nospc > 0 && w->n_nospc >= w->n_other ? STRATA_ENOSPC : STRATA_EQUORUM;
}

/* Reap completions until stripe slot b has nothing in flight.  Completions
 * of other slots met on the way are accounted too.  The finish chain is
 * reaped in finish() itself, never here. */
static void w_wait(struct strata_ec_writer *w, unsigned b)
{
    while (w->pending[b] > 0) {
        struct io_uring_cqe *cqe;
        int r = io_uring_wait_cqe(&w->io->ring, &cqe);
        if (r == -EINTR)
            continue;
        STRATA_ASSERT(r == 0);
        unsigned slot = (unsigned)(cqe->user_data >> 16), d = (unsigned)(cqe->user_data & 0xff);
        int res = cqe->res;
        io_uring_cqe_seen(&w->io->ring, cqe);
        STRATA_ASSERT(slot < STRATA_EC_NBUF);
        w->pending[slot]--;
        strata_ec__drive_io_note(w->set, d, STRATA_DRIVE_IO_WRITE, w->t_sub_ns[slot],
                                 res >= 0 && (size_t)res == w->set->shard_size);
        /* A short write to a regular file means the drive is full. */
        if (res < 0 || (size_t)res != w->set->shard_size) {
            int e = res < 0 ? -res : ENOSPC;
            strata_ec__drive_fault(w->set, d, e); /* counted by the note */
            w_drop(w, d, e);
        }
    }
}

/* Wait until every observer callback this writer queued has returned. */
static void w_obs_drain(struct strata_ec_writer *w)
{
    if (w->ticket_last)
        strata_ec__obs_wait(w->io->obs, w->ticket_last);
    memset(w->ticket, 0, sizeof(w->ticket));
}

/* Make slot b fillable: its shard writes completed and the observer is
 * done reading it. */
static void w_slot_ready(struct strata_ec_writer *w, unsigned b)
{
    w_wait(w, b);
    if (w->ticket[b]) {
        strata_ec__obs_wait(w->io->obs, w->ticket[b]);
        w->ticket[b] = 0;
    }
}

static void w_cleanup(struct strata_ec_writer *w)
{
    if (w->io) {
        for (unsigned b = 0; b < STRATA_EC_NBUF; b++)
            w_wait(w, b);
        w_obs_drain(w);
    }
    for (unsigned d = 0; d < w->set->n; d++) {
        if (w->fd[d] >= 0) {
            close(w->fd[d]);
            w->fd[d] = -1;
        }
        if (w->tmp[d]) {
            unlink(w->tmp[d]);
            STRATA_FREE(w->tmp[d]);
        }
    }
    w->alive = 0;
}

static int w_fail(struct strata_ec_writer *w, int err)
{
    w_cleanup(w);
    w->err = err;
    return err;
}

int strata_ec_writer_create(struct strata_set *set, const uint8_t data_id[STRATA_DATA_ID_LEN],
                            struct strata_ec_writer **out)
{
    struct strata_ec_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return STRATA_ENOMEM;
    w->set = set;
    memcpy(w->id, data_id, STRATA_DATA_ID_LEN);
    for (unsigned d = 0; d < STRATA_DRIVES_MAX; d++)
        w->fd[d] = -1;
    int rc = 0;
    w->io = strata_ec__io_get(set, &rc);
    if (!w->io) {
        free(w);
        return rc;
    }
    for (unsigned d = 0; d < set->n; d++) {
        /* A read-only or faulty drive is left out until its probe succeeds. */
        if (!strata_ec__drive_writable(set, d)) {
            w->n_other++;
            continue;
        }
        /* Find which shard this drive holds, for the tmp name only. */
        unsigned shard = (d + set->n - strata_ec__shard_drive(set, data_id, 0)) % set->n;
        rc = tmp_path_new(set, d, data_id, "s", shard, &w->tmp[d]);
        if (rc < 0)
            goto fail;
        w->fd[d] = strata_ec__tmp_create(w->tmp[d], O_WRONLY | (set->direct_io ? O_DIRECT : 0));
        if (w->fd[d] < 0) {
            int e = errno;
            strata_ec__drive_err(set, d, STRATA_DRIVE_IO_OPEN, e);
            STRATA_FREE(w->tmp[d]);
            if (e == ENOSPC || e == EDQUOT)
                w->n_nospc++;
            else
                w->n_other++;
            continue;
        }
        w->alive |= 1u << d;
    }
    rc = w_quorum_err(w);
    if (rc < 0)
        goto fail;
    *out = w;
    return 0;
fail:
    w_cleanup(w);
    strata_ec__io_put(set, w->io);
    free(w);
    return rc;
}

int strata_ec_writer_observe(struct strata_ec_writer *w, strata_ec_observe_cb cb, void *ud)
{
    if (!cb || w->obs_cb || w->size > 0 || w->finished || w->err)
        return STRATA_EINVAL;
    w->obs_cb = cb;
    w->obs_ud = ud;
    if (!w->io->obs)
        w->io->obs = strata_ec__obs_start(); /* NULL: callbacks run inline */
    return 0;
}

/* Length of every shard file of an object of size bytes: header, blocks,
 * CRC table; each byte of it is written by the writer. */
static uint64_t shard_file_len(const struct strata_set *set, uint64_t size)
{
    uint64_t stripe = (uint64_t)set->shard_size * set->k;
    uint64_t nblocks = (size + stripe - 1) / stripe;
    return STRATA_EC_HDR_SIZE + blocks_bytes(set, size, nblocks) + table_bytes(nblocks);
}

/* Allocation runs at most this far ahead of the bytes written to a shard
 * file, so a client that announces 5 GiB and sends little holds little
 * drive space. */
#define EXPECT_AHEAD (64ull << 20)

/* Allocate each shard file up to len bytes (extends it).  Only an
 * allocation: a failure (no space, a file system without fallocate) leaves
 * the writes to extend the files as before, and they report what is wrong. */
static void w_alloc(struct strata_ec_writer *w, uint64_t len)
{
    for (unsigned d = 0; d < w->set->n; d++)
        if (w->alive & (1u << d))
            (void)fallocate(w->fd[d], 0, 0, (off_t)len);
    w->alloc_len = len;
}

/* Before the shard writes of the stripe ending at offset end of the files. */
static void w_alloc_ahead(struct strata_ec_writer *w, uint64_t end)
{
    if (end <= w->alloc_len || w->alloc_len >= w->expect_len)
        return;
    uint64_t want = end > w->alloc_len + EXPECT_AHEAD ? end : w->alloc_len + EXPECT_AHEAD;
    w_alloc(w, want < w->expect_len ? want : w->expect_len);
}

int strata_ec_writer_expect(struct strata_ec_writer *w, uint64_t size)
{
    if (w->size > 0 || w->finished || w->err || w->expect_len)
        return STRATA_EINVAL;
    w->expect_len = shard_file_len(w->set, size);
    w_alloc_ahead(w, 1);
    return 0;
}

/* Before the finish chain syncs the files: each shard file allocated to
 * exactly the length the written bytes give (the size announced to expect
 * may have been wrong, or allocation not yet got that far). */
static void w_settle(struct strata_ec_writer *w)
{
    uint64_t len = shard_file_len(w->set, w->size);
    if (!w->expect_len || len == w->alloc_len)
        return;
    if (len > w->alloc_len) {
        w_alloc(w, len);
        return;
    }
    for (unsigned d = 0; d < w->set->n; d++) {
        if ((w->alive & (1u << d)) && ftruncate(w->fd[d], (off_t)len) != 0) {
            int e = errno;
            strata_ec__drive_fault(w->set, d, e);
            w_drop(w, d, e);
        }
    }
}

/* Hand the first len bytes of slot b to the observer. */
static void w_observe(struct strata_ec_writer *w, unsigned b, size_t len)
{
    if (!w->obs_cb || len == 0)
        return;
    if (!w->io->obs) {
        w->obs_cb(w->obs_ud, w->io->buf[b], len);
        return;
    }
    w->ticket[b] = strata_ec__obs_post(w->io->obs, w->obs_cb, w->obs_ud, w->io->buf[b], len);
    w->ticket_last = w->ticket[b];
}

static int w_crc_grow(struct strata_ec_writer *w)
{
    uint64_t ncap = w->cap ? w->cap * 2 : 64;
    for (unsigned s = 0; s < w->set->n; s++) {
        uint32_t *p = realloc(w->crc[s], ncap * sizeof(uint32_t));
        if (!p)
            return STRATA_ENOMEM;
        w->crc[s] = p;
    }
    w->cap = ncap;
    return 0;
}

/* Bytes of each shard encoded and CRC'd at a time (w_encode); a multiple
 * of 4096, as every block length is. */
#define ENC_SLICE (32u << 10)

/* Observe, pad and encode the current stripe slot and record its blocks'
 * CRCs as block number w->blocks (not yet counted). */
static int w_encode(struct strata_ec_writer *w)
{
    struct strata_set *set = w->set;
    /* Only the last stripe is ever partial: its size is the object's. */
    size_t ss = block_len(set, w->blocks * set->shard_size * set->k + w->fill, w->blocks);
    size_t stripe = ss * set->k;
    uint8_t *base = w->io->buf[w->cur];
    /* First, so the digest runs while this thread encodes and submits.  The
     * observer reads [0, fill); below only [fill, N * ss) is written. */
    w_observe(w, w->cur, w->fill);
    w->enc_len = ss;
    if (w->fill < stripe)
        memset(base + w->fill, 0, stripe - w->fill);
    if (w->blocks == w->cap && w_crc_grow(w) < 0)
        return w_fail(w, STRATA_ENOMEM);
    /* Column slices small enough to stay in the core's cache: the CRCs
     * read each slice right after the encoder touched it, instead of a
     * second pass over the whole stripe from memory. */
    uint32_t crc[STRATA_DRIVES_MAX] = {0};
    for (size_t off = 0; off < ss; off += ENC_SLICE) {
        size_t n = ss - off < ENC_SLICE ? ss - off : ENC_SLICE;
        uint8_t *shards[STRATA_DRIVES_MAX];
        for (unsigned s = 0; s < set->n; s++)
            shards[s] = base + (size_t)s * ss + off;
        strata_ec_encode(set->codec, shards, n);
        for (unsigned s = 0; s < set->n; s++)
            crc[s] = strata_crc32c(crc[s], shards[s], n);
    }
    for (unsigned s = 0; s < set->n; s++)
        w->crc[s][w->blocks] = crc[s];
    return 0;
}

/* Queue the write of shard s (on drive d) of the current slot's stripe. */
static struct io_uring_sqe *w_prep_shard(struct strata_ec_writer *w, unsigned s, unsigned d,
                                         uint64_t ud)
{
    size_t ss = w->enc_len; /* earlier blocks are all full: shard_size each */
    struct io_uring_sqe *sqe = io_uring_get_sqe(&w->io->ring);
    STRATA_ASSERT(sqe); /* callers leave room for what they queue */
    uint8_t *src = w->io->buf[w->cur] + (size_t)s * ss;
    uint64_t off = STRATA_EC_HDR_SIZE + w->blocks * w->set->shard_size;
    if (w->io->fixed & (1u << w->cur))
        io_uring_prep_write_fixed(sqe, w->fd[d], src, (unsigned)ss, off, (int)w->cur);
    else
        io_uring_prep_write(sqe, w->fd[d], src, (unsigned)ss, off);
    io_uring_sqe_set_data64(sqe, ud);
    return sqe;
}

/* Encode the current (full) stripe slot and submit its N shard writes, then
 * make the next slot ready for filling (its writes from NBUF stripes ago
 * have completed and the observer is done with it). */
static int w_flush(struct strata_ec_writer *w)
{
    struct strata_set *set = w->set;
    int rc = w_encode(w);
    if (rc < 0)
        return rc;
    w_alloc_ahead(w, STRATA_EC_HDR_SIZE + w->blocks * set->shard_size + w->enc_len);
    for (unsigned s = 0; s < set->n; s++) {
        unsigned d = strata_ec__shard_drive(set, w->id, s);
        if (!(w->alive & (1u << d)))
            continue;
        w_prep_shard(w, s, d, ud_make(w->cur, 0, d));
        w->pending[w->cur]++;
    }
    w->t_sub_ns[w->cur] = strata_ec__now_ns();
    int r = io_uring_submit(&w->io->ring);
    if (r < 0)
        return w_fail(w, STRATA_EIO);
    w->blocks++;
    w->cur = (w->cur + 1) % STRATA_EC_NBUF;
    w->fill = 0;
    if (!strata_ec__io_buf(set, w->io, w->cur))
        return w_fail(w, STRATA_ENOMEM);
    w_slot_ready(w, w->cur);
    int q = w_quorum_err(w);
    return q < 0 ? w_fail(w, q) : 0;
}

/* A full stripe is submitted when the next byte arrives, not when it
 * fills: the last one (all of a one-stripe object) then goes out at finish
 * as the head of each drive's linked publish chain, one round trip less. */
int strata_ec_writer_write(struct strata_ec_writer *w, const void *buf, size_t len)
{
    if (w->err)
        return w->err;
    if (w->finished)
        return STRATA_EINVAL;
    size_t stripe = w->set->shard_size * w->set->k;
    const uint8_t *p = buf;
    while (len > 0) {
        if (w->fill == stripe) {
            int rc = w_flush(w);
            if (rc < 0)
                return rc;
        }
        size_t n = stripe - w->fill < len ? stripe - w->fill : len;
        memcpy(w->io->buf[w->cur] + w->fill, p, n);
        w->fill += n;
        w->size += n;
        p += n;
        len -= n;
    }
    return 0;
}

uint64_t strata_ec_writer_size(const struct strata_ec_writer *w)
{
    return w->size;
}

/* Per drive outcome of the finish chain. */
struct wfin {
    unsigned want, ok; /* steps submitted, steps that succeeded (bit per ST_*) */
    int err;           /* errno of the first real failure */
    enum strata_drive_io_op op; /* the kind of operation that failed */
    int dfd;           /* data/<hh> directory, for its fsync */
    char *final, *dir;
};

/* Queue one drive's finish chain: [last stripe's block ->] table write ->
 * header write -> fsync -> rename into data/<hh>/ -> fsync of data/<hh>/,
 * linked (the block is queued by the caller), so the header never
 * lands before the table, the rename never before the data is durable, and
 * the directory fsync makes the rename durable.  All drives' chains go out
 * in one submission and run side by side. */
static void w_chain(struct strata_ec_writer *w, unsigned d, struct wfin *f, const uint8_t *hdr,
                    size_t tab, uint64_t nblocks)
{
    struct strata_set *set = w->set;
    struct io_uring *ring = &w->io->ring;
    struct io_uring_sqe *sqe;
    if (tab) {
        sqe = io_uring_get_sqe(ring);
        io_uring_prep_write(sqe, w->fd[d], hdr + STRATA_EC_HDR_SIZE, (unsigned)tab,
                            STRATA_EC_HDR_SIZE + blocks_bytes(set, w->size, nblocks));
        sqe->flags |= IOSQE_IO_LINK;
        io_uring_sqe_set_data64(sqe, ud_make(UD_CTL, ST_TAB, d));
        f->want |= 1u << ST_TAB;
    }
    sqe = io_uring_get_sqe(ring);
    io_uring_prep_write(sqe, w->fd[d], hdr, STRATA_EC_HDR_SIZE, 0);
    sqe->flags |= IOSQE_IO_LINK;
    io_uring_sqe_set_data64(sqe, ud_make(UD_CTL, ST_HDR, d));
    f->want |= 1u << ST_HDR;
    if (!set->no_fsync) {
        sqe = io_uring_get_sqe(ring);
        io_uring_prep_fsync(sqe, w->fd[d], 0);
        sqe->flags |= IOSQE_IO_LINK;
        io_uring_sqe_set_data64(sqe, ud_make(UD_CTL, ST_FSYNC, d));
        f->want |= 1u << ST_FSYNC;
    }
    sqe = io_uring_get_sqe(ring);
    io_uring_prep_renameat(sqe, AT_FDCWD, w->tmp[d], AT_FDCWD, f->final, 0);
    io_uring_sqe_set_data64(sqe, ud_make(UD_CTL, ST_RENAME, d));
    f->want |= 1u << ST_RENAME;
    if (f->dfd >= 0) {
        sqe->flags |= IOSQE_IO_LINK;
        sqe = io_uring_get_sqe(ring);
        io_uring_prep_fsync(sqe, f->dfd, 0);
        io_uring_sqe_set_data64(sqe, ud_make(UD_CTL, ST_DIRSYNC, d));
        f->want |= 1u << ST_DIRSYNC;
    }
}

/* Slow path of a drive whose rename found no data/<hh>/ (removed since the
 * chain was built): make it, rename, fsync it.  0 or errno. */
static int w_publish_slow(struct strata_ec_writer *w, unsigned d, struct wfin *f)
{
    int rr = rename(w->tmp[d], f->final);
    if (rr < 0 && errno == ENOENT && subdir_make(w->set, d, f->dir) == 0)
        rr = rename(w->tmp[d], f->final);
    f->op = STRATA_DRIVE_IO_RENAME;
    if (rr < 0)
        return errno;
    f->ok |= 1u << ST_RENAME;
    f->op = STRATA_DRIVE_IO_SYNC;
    int e = w->set->no_fsync ? 0 : -strata_ec__dir_fsync(f->dir);
    return e;
}

int strata_ec_writer_finish(struct strata_ec_writer *w, uint32_t *ok_mask)
{
    if (w->err)
        return w->err;
    if (w->finished)
        return STRATA_EINVAL;
    struct strata_set *set = w->set;
    /* The last stripe is encoded now and written at the head of the chains;
     * earlier ones must have completed, as the fsyncs cover only those. */
    bool last = w->fill > 0;
    if (last) {
        int rc = w_encode(w);
        if (rc < 0)
            return rc;
    }
    for (unsigned b = 0; b < STRATA_EC_NBUF; b++)
        w_wait(w, b);
    w_settle(w);
    int q = w_quorum_err(w);
    if (q < 0)
        return w_fail(w, q);
    uint64_t nblocks = w->blocks + (last ? 1 : 0);

    size_t tab = table_bytes(nblocks), per = STRATA_EC_HDR_SIZE + tab;
    uint8_t *tail = NULL;
    if (posix_memalign((void **)&tail, STRATA_EC_ALIGN, per * set->n))
        return w_fail(w, STRATA_ENOMEM);
    memset(tail, 0, per * set->n);
    struct wfin fin[STRATA_DRIVES_MAX];
    memset(fin, 0, sizeof(fin));
    unsigned pending = 0;
    unsigned start = strata_ec__shard_drive(set, w->id, 0);
    for (unsigned s = 0; s < set->n; s++) {
        unsigned d = (start + s) % set->n;
        struct wfin *f = &fin[d];
        f->dfd = -1;
        if (!(w->alive & (1u << d)))
            continue;
        if (strata_ec__shard_path(set, d, w->id, &f->final, &f->dir) < 0) {
            w_drop(w, d, ENOMEM);
            continue;
        }
        if (!set->no_fsync) {
            /* data/<hh>/ is made on first use; its fd is what the chain fsyncs. */
            f->dfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (f->dfd < 0 && errno == ENOENT && subdir_make(set, d, f->dir) == 0)
                f->dfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (f->dfd < 0) {
                int e = errno;
                strata_ec__drive_err(set, d, STRATA_DRIVE_IO_OPEN, e);
                w_drop(w, d, e);
                continue;
            }
        }
        uint8_t *hdr = tail + per * d, *tb = hdr + STRATA_EC_HDR_SIZE;
        shard_tail_make(set, s, w->id, w->size, nblocks, w->crc[s], tb, hdr);
        /* A chain must go out in one submission, or its links are cut. */
        if (io_uring_sq_space_left(&w->io->ring) < 6) {
            int r = io_uring_submit(&w->io->ring);
            if (r < 0) {
                q = STRATA_EIO;
                break;
            }
            pending += (unsigned)r;
        }
        if (last) {
            w_prep_shard(w, s, d, ud_make(UD_CTL, ST_DATA, d))->flags |= IOSQE_IO_LINK;
            f->want |= 1u << ST_DATA;
        }
        w_chain(w, d, f, hdr, tab, nblocks);
    }
    if (q == 0) {
        int r = io_uring_submit(&w->io->ring);
        if (r < 0)
            q = STRATA_EIO; /* fail below, once what went out is reaped */
        else
            pending += (unsigned)r;
    }
    while (pending > 0) {
        struct io_uring_cqe *cqe;
        int r = io_uring_wait_cqe(&w->io->ring, &cqe);
        if (r == -EINTR)
            continue;
        STRATA_ASSERT(r == 0);
        unsigned step = (unsigned)(cqe->user_data >> 8) & 0xff, d = (unsigned)(cqe->user_data & 0xff);
        int res = cqe->res;
        io_uring_cqe_seen(&w->io->ring, cqe);
        STRATA_ASSERT((cqe->user_data >> 16) == UD_CTL && d < set->n);
        pending--;
        /* Writes return their byte count, a short one means a full drive;
         * fsync and rename return 0.  Steps after a failed one come back
         * -ECANCELED: keep the first real reason. */
        size_t want = step == ST_DATA  ? w->enc_len
                      : step == ST_TAB ? tab
                      : step == ST_HDR ? STRATA_EC_HDR_SIZE
                                       : 0;
        if (res >= 0 && (size_t)res == want) {
            fin[d].ok |= 1u << step;
        } else if (!fin[d].err || fin[d].err == ECANCELED) {
            fin[d].err = res < 0 ? -res : ENOSPC;
            fin[d].op = step == ST_FSYNC || step == ST_DIRSYNC ? STRATA_DRIVE_IO_SYNC
                        : step == ST_RENAME                    ? STRATA_DRIVE_IO_RENAME
                                                               : STRATA_DRIVE_IO_WRITE;
        }
    }
    free(tail);
    uint32_t published = 0;
    for (unsigned d = 0; d < set->n; d++) {
        struct wfin *f = &fin[d];
        if (f->dfd >= 0)
            close(f->dfd);
        if (!(w->alive & (1u << d)))
            continue;
        close(w->fd[d]);
        w->fd[d] = -1;
        int e = q < 0 ? EIO : f->ok == f->want ? 0 : f->err ? f->err : EIO;
        bool real = q == 0 && f->err != 0; /* e is the drive's own errno */
        /* Everything before the rename done, only the rename missed its directory. */
        uint32_t before = f->want & ((1u << ST_RENAME) - 1);
        if (e == ENOENT && (f->ok & before) == before && !(f->ok & (1u << ST_RENAME)))
            e = w_publish_slow(w, d, f);
        if (f->ok & (1u << ST_RENAME))
            published |= 1u << d;
        if (e == 0) {
            STRATA_FREE(w->tmp[d]);
            continue;
        }
        if (f->ok & (1u << ST_RENAME))
            unlink(f->final); /* renamed, but not durably */
        published &= ~(1u << d);
        if (real)
            strata_ec__drive_err(set, d, f->op, e);
        w_drop(w, d, e);
    }
    if (q == 0)
        q = w_quorum_err(w);
    for (unsigned d = 0; d < set->n; d++) {
        if (q < 0 && (published & (1u << d)))
            unlink(fin[d].final);
        free(fin[d].final);
        free(fin[d].dir);
    }
    if (q < 0)
        return w_fail(w, q);
    w->blocks = nblocks;
    w->fill = 0;
    w_obs_drain(w);
    w->finished = true;
    if (ok_mask)
        *ok_mask = w->alive;
    return 0;
}

void strata_ec_writer_destroy(struct strata_ec_writer *w)
{
    if (!w)
        return;
    if (!w->finished)
        w_cleanup(w);
    strata_ec__io_put(w->set, w->io);
    for (unsigned s = 0; s < STRATA_DRIVES_MAX; s++)
        free(w->crc[s]);
    free(w);
}

/* ---- reader -------------------------------------------------------------- */

enum { SH_UNKNOWN, SH_OK, SH_DEAD };

struct rstripe {
    int64_t idx;          /* stripe held or being read; -1 none */
    bool ready;           /* verified and reconstructed */
    uint32_t submitted, done, checked, good;
    int res[STRATA_DRIVES_MAX];
    uint64_t t_sub_ns[STRATA_DRIVES_MAX]; /* by shard: when its read was submitted */
    uint32_t want[STRATA_DRIVES_MAX];     /* by shard: the bytes that read asks for */
};

struct strata_ec_reader {
    struct strata_set *set;
    uint8_t id[STRATA_DATA_ID_LEN];
    uint64_t size, blocks;
    struct strata_ec__io *io;
    int fd[STRATA_DRIVES_MAX]; /* by shard index */
    int state[STRATA_DRIVES_MAX];
    uint32_t *crc[STRATA_DRIVES_MAX];
    struct rstripe st[STRATA_EC_NBUF]; /* by stripe slot of io */
    uint64_t next_off;
    uint64_t ahead_end; /* no read-ahead of stripes starting at or past it */
    bool verify_all; /* heal: read and check every shard */
    bool offline_hit;
    uint32_t bad_seen; /* shards that failed at least one check */
    uint32_t gone;     /* shards whose file does not exist (ENOENT) */
};

static void shard_dead(struct strata_ec_reader *r, unsigned s)
{
    r->state[s] = SH_DEAD;
    r->bad_seen |= 1u << s;
    if (r->fd[s] >= 0) {
        close(r->fd[s]);
        r->fd[s] = -1;
    }
}

/* Open shard s's file; false (shard marked dead) on failure. */
static bool shard_fd_open(struct strata_ec_reader *r, unsigned s)
{
    struct strata_set *set = r->set;
    unsigned d = strata_ec__shard_drive(set, r->id, s);
    if (!set->drives[d].online) {
        r->offline_hit = true;
        shard_dead(r, s);
        return false;
    }
    char *path = NULL;
    if (strata_ec__shard_path(set, d, r->id, &path, NULL) < 0) {
        shard_dead(r, s);
        return false;
    }
    /* Shard files are immutable (a rewrite is a new inode: tmp/ + rename),
     * so cached pages are never stale; heal (verify_all) reads the drive. */
    bool direct = set->direct_io && (r->verify_all || r->size > set->read_cached_max);
    r->fd[s] = open(path, O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
    free(path);
    if (r->fd[s] < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            r->gone |= 1u << s;
        STRATA_EC__STAT_ADD(set, shards_missing, 1);
        shard_dead(r, s);
        return false;
    }
    return true;
}

/* Check shard s's header (hb, or NULL when it could not be read) and CRC
 * table (tb, table_bytes(blocks) bytes), and keep the block CRCs: state
 * SH_OK, else dead (a truncated or rotten header or table makes the whole
 * shard unusable). */
static void shard_meta_check(struct strata_ec_reader *r, unsigned s, const uint8_t *hb,
                             const uint8_t *tb)
{
    struct strata_set *set = r->set;
    struct strata_ec__hdr h;
    bool ok = hb && tb && strata_ec__hdr_decode(hb, &h) == 0 &&
              !memcmp(h.data_id, r->id, STRATA_DATA_ID_LEN) && h.shard_index == s &&
              h.version == set->layout && h.k == set->k && h.m == set->m &&
              h.shard_size == set->shard_size &&
              h.object_size == r->size && h.block_count == r->blocks &&
              strata_crc32c(0, tb, (size_t)r->blocks * 4) == h.table_crc;
    if (ok && r->blocks) {
        r->crc[s] = malloc((size_t)r->blocks * sizeof(uint32_t));
        ok = r->crc[s] != NULL;
        for (uint64_t b = 0; ok && b < r->blocks; b++)
            r->crc[s][b] = get32(tb + b * 4);
    }
    if (!ok) {
        STRATA_EC__STAT_ADD(set, bitrot_detected, 1);
        shard_dead(r, s);
        return;
    }
    r->state[s] = SH_OK;
}

/* Open shard s and load its header and CRC table; marks it dead on failure. */
static void shard_open(struct strata_ec_reader *r, unsigned s)
{
    if (r->state[s] != SH_UNKNOWN)
        return;
    if (!shard_fd_open(r, s))
        return;
    size_t tab = table_bytes(r->blocks);
    uint8_t *hb = NULL;
    if (posix_memalign((void **)&hb, STRATA_EC_ALIGN, STRATA_EC_HDR_SIZE + tab)) {
        shard_dead(r, s);
        return;
    }
    uint8_t *tb = hb + STRATA_EC_HDR_SIZE;
    uint64_t t0 = strata_ec__now_ns();
    bool hok = pread(r->fd[s], hb, STRATA_EC_HDR_SIZE, 0) == (ssize_t)STRATA_EC_HDR_SIZE;
    bool tok = !tab || pread(r->fd[s], tb, tab,
                             (off_t)(STRATA_EC_HDR_SIZE +
                                     blocks_bytes(r->set, r->size, r->blocks))) == (ssize_t)tab;
    strata_ec__drive_io_note(r->set, strata_ec__shard_drive(r->set, r->id, s),
                             STRATA_DRIVE_IO_READ, t0, hok && tok);
    shard_meta_check(r, s, hok ? hb : NULL, tok ? tb : NULL);
    free(hb);
}

/* Queue reads of the shards in mask for stripe buffer b; returns how many. */
static unsigned r_submit(struct strata_ec_reader *r, unsigned b, uint32_t mask)
{
    struct rstripe *st = &r->st[b];
    size_t ss = block_len(r->set, r->size, (uint64_t)st->idx);
    unsigned n = 0;
    for (unsigned s = 0; s < r->set->n; s++) {
        if (!(mask & (1u << s)) || (st->submitted & (1u << s)))
            continue;
        shard_open(r, s);
        if (r->state[s] != SH_OK)
            continue;
        struct io_uring_sqe *sqe = io_uring_get_sqe(&r->io->ring);
        STRATA_ASSERT(sqe);
        io_uring_prep_read(sqe, r->fd[s], r->io->buf[b] + (size_t)s * ss, (unsigned)ss,
                           STRATA_EC_HDR_SIZE + (uint64_t)st->idx * r->set->shard_size);
        io_uring_sqe_set_data64(sqe, (uint64_t)b << 8 | s);
        st->submitted |= 1u << s;
        st->t_sub_ns[s] = strata_ec__now_ns();
        st->want[s] = (uint32_t)ss;
        n++;
    }
    if (n && io_uring_submit(&r->io->ring) < 0) {
        /* Could not submit: treat the shards as failed reads. */
        for (unsigned s = 0; s < r->set->n; s++)
            if ((mask & (1u << s)) && (st->submitted & (1u << s)) && !(st->done & (1u << s))) {
                st->res[s] = -EIO;
                st->done |= 1u << s;
            }
    }
    return n;
}

/* user_data slot of the header/table reads of r_open_batch. */
#define UD_META 0xffu

/* Reap one completion: a block read of stripe slot bb, or (UD_META) a
 * header/table read, whose result goes to meta_res[s][0 or 1]. */
static void r_reap(struct strata_ec_reader *r, int (*meta_res)[2], unsigned *meta_pending)
{
    struct io_uring_cqe *cqe;
    int rc;
    while ((rc = io_uring_wait_cqe(&r->io->ring, &cqe)) == -EINTR)
        ;
    STRATA_ASSERT(rc == 0);
    unsigned bb = (unsigned)(cqe->user_data >> 8), s = (unsigned)(cqe->user_data & 0xff);
    int res = cqe->res;
    io_uring_cqe_seen(&r->io->ring, cqe);
    if (bb == UD_META) {
        STRATA_ASSERT(meta_res && s < 2 * STRATA_DRIVES_MAX);
        meta_res[s / 2][s % 2] = res;
        (*meta_pending)--;
        return;
    }
    STRATA_ASSERT(bb < STRATA_EC_NBUF && s < STRATA_DRIVES_MAX);
    strata_ec__drive_io_note(r->set, strata_ec__shard_drive(r->set, r->id, s),
                             STRATA_DRIVE_IO_READ, r->st[bb].t_sub_ns[s],
                             res >= 0 && (uint32_t)res == r->st[bb].want[s]);
    r->st[bb].res[s] = res;
    r->st[bb].done |= 1u << s;
}

static void r_wait(struct strata_ec_reader *r, unsigned b)
{
    while (r->st[b].submitted & ~r->st[b].done)
        r_reap(r, NULL, NULL);
}

/* shard_open for every not yet opened shard in mask at once: the header
 * and table reads of all of them go out in one submission (instead of two
 * preads per shard, one shard after the other). */
static void r_open_batch(struct strata_ec_reader *r, uint32_t mask)
{
    struct strata_set *set = r->set;
    size_t tab = table_bytes(r->blocks), meta = STRATA_EC_HDR_SIZE + tab;
    uint32_t todo = 0;
    for (unsigned s = 0; s < set->n; s++)
        if ((mask & (1u << s)) && r->state[s] == SH_UNKNOWN)
            todo |= 1u << s;
    if (__builtin_popcount(todo) < 2)
        return; /* nothing to overlap: shard_open does it */
    uint8_t *scratch = NULL;
    if (posix_memalign((void **)&scratch, STRATA_EC_ALIGN, meta * set->n))
        return;
    int res[STRATA_DRIVES_MAX][2];
    unsigned pending = 0;
    uint32_t sent = 0;
    for (unsigned s = 0; s < set->n; s++) {
        if (!(todo & (1u << s)) || !shard_fd_open(r, s))
            continue;
        uint8_t *hb = scratch + meta * s;
        struct io_uring_sqe *sqe = io_uring_get_sqe(&r->io->ring);
        STRATA_ASSERT(sqe);
        io_uring_prep_read(sqe, r->fd[s], hb, STRATA_EC_HDR_SIZE, 0);
        io_uring_sqe_set_data64(sqe, (uint64_t)UD_META << 8 | (2 * s));
        sqe = io_uring_get_sqe(&r->io->ring);
        STRATA_ASSERT(sqe);
        io_uring_prep_read(sqe, r->fd[s], hb + STRATA_EC_HDR_SIZE, (unsigned)tab,
                           STRATA_EC_HDR_SIZE + blocks_bytes(set, r->size, r->blocks));
        io_uring_sqe_set_data64(sqe, (uint64_t)UD_META << 8 | (2 * s + 1));
        res[s][0] = res[s][1] = -EIO;
        sent |= 1u << s;
        pending += 2;
    }
    uint64_t t0 = strata_ec__now_ns();
    /* Every queued read must go out and come back before scratch is freed. */
    for (unsigned out = 0; out < pending;) {
        int rc = io_uring_submit(&r->io->ring);
        STRATA_ASSERT(rc > 0);
        out += (unsigned)rc;
    }
    while (pending > 0)
        r_reap(r, res, &pending);
    for (unsigned s = 0; s < set->n; s++) {
        if (!(sent & (1u << s)))
            continue;
        uint8_t *hb = scratch + meta * s;
        bool ok = res[s][0] == (int)STRATA_EC_HDR_SIZE && res[s][1] == (int)tab;
        strata_ec__drive_io_note(set, strata_ec__shard_drive(set, r->id, s),
                                 STRATA_DRIVE_IO_READ, t0, ok);
        shard_meta_check(r, s, res[s][0] == (int)STRATA_EC_HDR_SIZE ? hb : NULL,
                         res[s][1] == (int)tab ? hb + STRATA_EC_HDR_SIZE : NULL);
    }
    free(scratch);
}

static void r_verify(struct strata_ec_reader *r, unsigned b)
{
    struct rstripe *st = &r->st[b];
    size_t ss = block_len(r->set, r->size, (uint64_t)st->idx);
    uint32_t todo = st->done & ~st->checked;
    for (unsigned s = 0; s < r->set->n; s++) {
        if (!(todo & (1u << s)))
            continue;
        st->checked |= 1u << s;
        if (st->res[s] == (int)ss) {
            if (strata_crc32c(0, r->io->buf[b] + (size_t)s * ss, ss) == r->crc[s][st->idx]) {
                st->good |= 1u << s;
                continue;
            }
            STRATA_EC__STAT_ADD(r->set, bitrot_detected, 1);
        } else {
            STRATA_EC__STAT_ADD(r->set, shards_missing, 1);
        }
        r->bad_seen |= 1u << s;
    }
}

static void r_reset(struct rstripe *st, int64_t idx)
{
    memset(st, 0, sizeof(*st));
    st->idx = idx;
}

/*
 * First read of a one-stripe object (the small objects that are not
 * inline): each shard file is header, one block, table - contiguous - so
 * one vectored read per shard fetches all three, and the K reads run side
 * by side.  The general path reads header and table with two preads per
 * shard, one shard after the other, before the block reads go out: four
 * serial disk reads for a 2+2 GET.  Shards that fail here are left
 * unsubmitted for r_load to replace from parity.
 */
static void r_first(struct strata_ec_reader *r, unsigned b, uint32_t mask)
{
    struct strata_set *set = r->set;
    struct rstripe *st = &r->st[b];
    size_t ss = block_len(set, r->size, 0), tab = table_bytes(1), meta = STRATA_EC_HDR_SIZE + tab;
    uint8_t *scratch = NULL;
    if (posix_memalign((void **)&scratch, STRATA_EC_ALIGN, meta * set->n)) {
        r_submit(r, b, mask); /* general path */
        return;
    }
    struct iovec iov[STRATA_DRIVES_MAX][3];
    uint32_t combined = 0;
    for (unsigned s = 0; s < set->n; s++) {
        if (!(mask & (1u << s)) || r->state[s] == SH_DEAD)
            continue;
        if (r->state[s] == SH_OK || !shard_fd_open(r, s))
            continue;
        uint8_t *hb = scratch + meta * s;
        iov[s][0] = (struct iovec){hb, STRATA_EC_HDR_SIZE};
        iov[s][1] = (struct iovec){r->io->buf[b] + (size_t)s * ss, ss};
        iov[s][2] = (struct iovec){hb + STRATA_EC_HDR_SIZE, tab};
        struct io_uring_sqe *sqe = io_uring_get_sqe(&r->io->ring);
        STRATA_ASSERT(sqe);
        io_uring_prep_readv(sqe, r->fd[s], iov[s], 3, 0);
        io_uring_sqe_set_data64(sqe, (uint64_t)b << 8 | s);
        st->submitted |= 1u << s;
        st->t_sub_ns[s] = strata_ec__now_ns();
        st->want[s] = (uint32_t)(ss + meta);
        combined |= 1u << s;
    }
    if (combined && io_uring_submit(&r->io->ring) < 0) {
        for (unsigned s = 0; s < set->n; s++)
            if (combined & (1u << s)) {
                st->res[s] = -EIO;
                st->done |= 1u << s;
            }
    }
    /* Shards already open (their header known) read just the block. */
    r_submit(r, b, mask & ~combined);
    r_wait(r, b);
    for (unsigned s = 0; s < set->n; s++) {
        if (!(combined & (1u << s)))
            continue;
        bool ok = st->res[s] == (int)(ss + meta);
        uint8_t *hb = scratch + meta * s;
        shard_meta_check(r, s, ok ? hb : NULL, ok ? hb + STRATA_EC_HDR_SIZE : NULL);
        if (r->state[s] == SH_OK) {
            st->res[s] = (int)ss; /* as a block read, for r_verify */
        } else {
            /* Counted by the check; not a block result for r_verify. */
            st->submitted &= ~(1u << s);
            st->done &= ~(1u << s);
        }
    }
    free(scratch);
}

/* Make buffer b hold stripe idx, verified and (if needed) reconstructed. */
static int r_load(struct strata_ec_reader *r, unsigned b, int64_t idx)
{
    struct strata_set *set = r->set;
    struct rstripe *st = &r->st[b];
    uint32_t all = (1u << set->n) - 1, data = (1u << set->k) - 1;
    if (st->idx == idx && st->ready)
        return 0;
    if (st->idx != idx) {
        r_wait(r, b); /* drain a stale read-ahead before reusing the buffer */
        r_reset(st, idx);
    }
    if (!st->submitted) {
        if (r->blocks == 1 && !r->verify_all) {
            r_first(r, b, data);
        } else {
            r_open_batch(r, r->verify_all ? all : data);
            r_submit(r, b, r->verify_all ? all : data);
        }
    }
    for (;;) {
        r_wait(r, b);
        r_verify(r, b);
        unsigned ng = (unsigned)__builtin_popcount(st->good);
        if (!r->verify_all && ((st->good & data) == data || ng >= set->k))
            break;
        /* Ask for as many more shards as are still missing to reach K. */
        uint32_t cand = all & ~st->submitted;
        unsigned want = r->verify_all ? set->n : set->k - ng, got = 0;
        uint32_t pick = 0;
        for (unsigned s = 0; s < set->n && got < want; s++)
            if (cand & (1u << s)) {
                shard_open(r, s);
                if (r->state[s] == SH_OK) {
                    pick |= 1u << s;
                    got++;
                }
            }
        if (!pick)
            break;
        r_submit(r, b, pick);
    }
    if ((unsigned)__builtin_popcount(st->good) < set->k) {
        r_reset(st, -1);
        if (r->offline_hit)
            return STRATA_EQUORUM;
        /* Files that do not exist mean the data was deleted (or never
         * finished), not that a drive returned bad bytes. */
        return r->gone && !(r->bad_seen & ~r->gone) ? STRATA_ENOTFOUND : STRATA_ECORRUPT;
    }
    bool need = r->verify_all ? st->good != all : (st->good & data) != data;
    if (need) {
        uint8_t *shards[STRATA_DRIVES_MAX];
        bool present[STRATA_DRIVES_MAX];
        size_t ss = block_len(set, r->size, (uint64_t)idx);
        for (unsigned s = 0; s < set->n; s++) {
            shards[s] = r->io->buf[b] + (size_t)s * ss;
            present[s] = st->good & (1u << s);
        }
        int rc = strata_ec_reconstruct(set->codec, shards, present, ss);
        if (rc < 0) {
            r_reset(st, -1);
            return rc;
        }
        if ((st->good & data) != data)
            STRATA_EC__STAT_ADD(set, stripes_reconstructed, 1);
    }
    st->ready = true;
    return 0;
}

int strata_ec_reader_open(struct strata_set *set, const uint8_t data_id[STRATA_DATA_ID_LEN],
                          uint64_t size, struct strata_ec_reader **out)
{
    struct strata_ec_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return STRATA_ENOMEM;
    r->set = set;
    memcpy(r->id, data_id, STRATA_DATA_ID_LEN);
    r->size = size;
    r->blocks = blocks_for(set, size);
    r->ahead_end = size;
    for (unsigned s = 0; s < STRATA_DRIVES_MAX; s++)
        r->fd[s] = -1;
    for (unsigned b = 0; b < STRATA_EC_NBUF; b++)
        r_reset(&r->st[b], -1);
    int rc = 0;
    r->io = strata_ec__io_get(set, &rc);
    if (!r->io) {
        free(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* Slot holding (or reading) stripe idx, or -1. */
static int r_find(const struct strata_ec_reader *r, int64_t idx)
{
    for (unsigned b = 0; b < STRATA_EC_NBUF; b++)
        if (r->st[b].idx == idx)
            return (int)b;
    return -1;
}

/* A slot whose stripe is outside [lo, hi] (or none), allocated buffers
 * first; -1 when every other buffer is in use or cannot be allocated. */
static int r_spare(struct strata_ec_reader *r, int64_t lo, int64_t hi)
{
    for (unsigned pass = 0; pass < 2; pass++)
        for (unsigned b = 0; b < STRATA_EC_NBUF; b++) {
            if (r->st[b].idx >= lo && r->st[b].idx <= hi)
                continue;
            if (pass == 0 ? r->io->buf[b] != NULL : strata_ec__io_buf(r->set, r->io, b) != NULL)
                return (int)b;
        }
    return -1;
}

/* Make a slot hold stripe idx, verified; its slot index or an error. */
static int r_stripe(struct strata_ec_reader *r, int64_t idx)
{
    const int64_t ahead = STRATA_EC_NBUF - 1;
    int b = r_find(r, idx);
    if (b < 0)
        b = r_spare(r, idx, idx + ahead);
    if (b < 0)
        b = 0; /* buf[0] always exists; costs a read-ahead at worst */
    int rc = r_load(r, (unsigned)b, idx);
    return rc < 0 ? rc : b;
}

/* After a read that ended in stripe idx (slot b): when the read continued
 * the previous one, read ahead the next NBUF - 1 stripes (not past
 * ahead_end), using the shards that just proved good, so disk reads overlap
 * the caller's work.  The stripe just read stays: the caller may not have
 * consumed all of it. */
static void r_ahead(struct strata_ec_reader *r, int64_t idx, unsigned b)
{
    const int64_t ahead = STRATA_EC_NBUF - 1;
    uint64_t stripe = (uint64_t)r->set->shard_size * r->set->k;
    uint32_t data = (1u << r->set->k) - 1, good = r->st[b].good;
    uint32_t mask = (good & data) == data ? data : good;
    for (int64_t t = idx + 1;
         t <= idx + ahead && (uint64_t)t < r->blocks && (uint64_t)t * stripe < r->ahead_end; t++) {
        if (r_find(r, t) >= 0)
            continue;
        int o = r_spare(r, idx, idx + ahead);
        if (o < 0)
            break;
        r_wait(r, (unsigned)o);
        r_reset(&r->st[o], t);
        r_submit(r, (unsigned)o, mask);
    }
}

int strata_ec_reader_read(struct strata_ec_reader *r, uint64_t off, void *buf, size_t len)
{
    if (off > r->size || len > r->size - off)
        return STRATA_ERANGE;
    if (len == 0)
        return 0;
    uint64_t stripe = (uint64_t)r->set->shard_size * r->set->k;
    bool sequential = off == r->next_off;
    uint8_t *out = buf;
    uint64_t pos = off, end = off + len;
    int b = 0;
    int64_t idx = 0;
    while (pos < end) {
        idx = (int64_t)(pos / stripe);
        b = r_stripe(r, idx);
        if (b < 0)
            return b;
        uint64_t in = pos - (uint64_t)idx * stripe;
        uint64_t n = stripe - in < end - pos ? stripe - in : end - pos;
        memcpy(out, r->io->buf[b] + in, n);
        out += n;
        pos += n;
    }
    r->next_off = end;
    if (sequential)
        r_ahead(r, idx, (unsigned)b);
    return 0;
}

int strata_ec_reader_peek(struct strata_ec_reader *r, uint64_t off, size_t max,
                          const uint8_t **p, size_t *n)
{
    *p = NULL;
    *n = 0;
    if (off >= r->size || max == 0)
        return off > r->size ? STRATA_ERANGE : 0;
    uint64_t stripe = (uint64_t)r->set->shard_size * r->set->k;
    bool sequential = off == r->next_off;
    int64_t idx = (int64_t)(off / stripe);
    int b = r_stripe(r, idx);
    if (b < 0)
        return b;
    uint64_t in = off - (uint64_t)idx * stripe;
    uint64_t avail = stripe - in < r->size - off ? stripe - in : r->size - off;
    *p = r->io->buf[b] + in;
    *n = avail < max ? (size_t)avail : max;
    r->next_off = off + *n;
    if (sequential)
        r_ahead(r, idx, (unsigned)b);
    return 0;
}

void strata_ec_reader_limit(struct strata_ec_reader *r, uint64_t end)
{
    r->ahead_end = end < r->size ? end : r->size;
}

void strata_ec_reader_close(struct strata_ec_reader *r)
{
    if (!r)
        return;
    for (unsigned b = 0; b < STRATA_EC_NBUF; b++)
        r_wait(r, b);
    for (unsigned s = 0; s < STRATA_DRIVES_MAX; s++) {
        if (r->fd[s] >= 0)
            close(r->fd[s]);
        free(r->crc[s]);
    }
    strata_ec__io_put(r->set, r->io);
    free(r);
}

/* ---- heal ------------------------------------------------------------------ */

/* mkdir data/, data/<hh>/ and tmp/ on a drive whose tree was removed; the
 * drive root itself must still exist (a vanished drive stays missing). */
static int heal_dirs(const struct strata_set *set, unsigned d, const char *subdir)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/data", set->drives[d].path);
    if (mkdir(p, 0755) < 0 && errno != EEXIST)
        return -errno;
    if (mkdir(subdir, 0755) < 0 && errno != EEXIST)
        return -errno;
    snprintf(p, sizeof(p), "%s/tmp", set->drives[d].path);
    if (mkdir(p, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

int strata_ec_heal(struct strata_set *set, const uint8_t data_id[STRATA_DATA_ID_LEN], uint64_t size,
                   unsigned *healed)
{
    if (healed)
        *healed = 0;
    struct strata_ec_reader *r;
    int rc = strata_ec_reader_open(set, data_id, size, &r);
    if (rc < 0)
        return rc;
    r->verify_all = true;
    /* Pass 1: find every shard that is missing or has a bad block. */
    for (unsigned s = 0; s < set->n; s++)
        shard_open(r, s);
    for (uint64_t i = 0; i < r->blocks && rc == 0; i++)
        rc = r_load(r, 0, (int64_t)i);
    if (rc < 0) {
        strata_ec_reader_close(r);
        return rc;
    }
    uint32_t bad = r->bad_seen;
    for (unsigned s = 0; s < set->n; s++)
        if (r->state[s] != SH_OK)
            bad |= 1u << s;

    int fd[STRATA_DRIVES_MAX];
    char *tmp[STRATA_DRIVES_MAX] = {0}, *final[STRATA_DRIVES_MAX] = {0}, *dir[STRATA_DRIVES_MAX] = {0};
    uint32_t *crc[STRATA_DRIVES_MAX] = {0};
    uint32_t target = 0;
    for (unsigned s = 0; s < set->n; s++) {
        fd[s] = -1;
        unsigned d = strata_ec__shard_drive(set, data_id, s);
        /* A read-only or faulty drive is refilled after its probe succeeded. */
        if (!(bad & (1u << s)) || !strata_ec__drive_writable(set, d))
            continue;
        if (strata_ec__shard_path(set, d, data_id, &final[s], &dir[s]) < 0)
            continue;
        int hd = heal_dirs(set, d, dir[s]);
        if (hd < 0) {
            strata_ec__drive_err(set, d, STRATA_DRIVE_IO_OPEN, -hd);
            continue;
        }
        if (tmp_path_new(set, d, data_id, "h", s, &tmp[s]) < 0)
            continue;
        fd[s] = strata_ec__tmp_create(tmp[s], O_WRONLY);
        if (fd[s] < 0)
            strata_ec__drive_err(set, d, STRATA_DRIVE_IO_OPEN, errno);
        crc[s] = malloc((size_t)(r->blocks ? r->blocks : 1) * sizeof(uint32_t));
        if (fd[s] < 0 || !crc[s])
            continue;
        target |= 1u << s;
    }

    /* Pass 2: rebuild every stripe and write the target shards' blocks. */
    size_t ss = set->shard_size;
    for (uint64_t i = 0; i < r->blocks && target && rc == 0; i++) {
        r_reset(&r->st[0], -1);
        rc = r_load(r, 0, (int64_t)i);
        size_t bl = block_len(set, size, i);
        for (unsigned s = 0; s < set->n && rc == 0; s++) {
            if (!(target & (1u << s)))
                continue;
            const uint8_t *blk = r->io->buf[0] + (size_t)s * bl;
            crc[s][i] = strata_crc32c(0, blk, bl);
            ssize_t wn = pwrite(fd[s], blk, bl, (off_t)(STRATA_EC_HDR_SIZE + i * ss));
            if (wn != (ssize_t)bl) {
                strata_ec__drive_err(set, strata_ec__shard_drive(set, data_id, s),
                                     STRATA_DRIVE_IO_WRITE, wn < 0 ? errno : ENOSPC);
                target &= ~(1u << s);
            }
        }
    }
    size_t tab = table_bytes(r->blocks);
    uint8_t *tail = calloc(1, STRATA_EC_HDR_SIZE + tab);
    unsigned count = 0;
    for (unsigned s = 0; s < set->n && rc == 0 && tail; s++) {
        if (!(target & (1u << s)))
            continue;
        uint8_t *tb = tail + STRATA_EC_HDR_SIZE;
        memset(tail, 0, STRATA_EC_HDR_SIZE + tab);
        shard_tail_make(set, s, data_id, size, r->blocks, crc[s], tb, tail);
        enum strata_drive_io_op op = STRATA_DRIVE_IO_WRITE;
        errno = ENOSPC; /* a short write sets none */
        bool ok =
            (!tab || pwrite(fd[s], tb, tab,
                            (off_t)(STRATA_EC_HDR_SIZE + blocks_bytes(set, size, r->blocks))) ==
                         (ssize_t)tab) &&
            pwrite(fd[s], tail, STRATA_EC_HDR_SIZE, 0) == (ssize_t)STRATA_EC_HDR_SIZE &&
            (op = STRATA_DRIVE_IO_SYNC, set->no_fsync || fsync(fd[s]) == 0) &&
            (op = STRATA_DRIVE_IO_RENAME, rename(tmp[s], final[s]) == 0);
        if (!ok)
            strata_ec__drive_err(set, strata_ec__shard_drive(set, data_id, s), op, errno);
        if (ok) {
            STRATA_FREE(tmp[s]);
            if (!set->no_fsync)
                (void)strata_ec__dir_fsync(dir[s]);
            count++;
        }
    }
    free(tail);
    for (unsigned s = 0; s < set->n; s++) {
        if (fd[s] >= 0)
            close(fd[s]);
        if (tmp[s])
            unlink(tmp[s]);
        free(tmp[s]);
        free(final[s]);
        free(dir[s]);
        free(crc[s]);
    }
    strata_ec_reader_close(r);
    if (count)
        STRATA_EC__STAT_ADD(set, shards_healed, count);
    if (healed)
        *healed = count;
    if (rc == 0 && !tail)
        rc = STRATA_ENOMEM;
    return rc;
}

/* ---- delete and reclaim ------------------------------------------------------ */

int strata_ec_delete(struct strata_set *set, const uint8_t data_id[STRATA_DATA_ID_LEN])
{
    int rc = 0;
    for (unsigned d = 0; d < set->n; d++) {
        if (!set->drives[d].online)
            continue;
        char *path = NULL;
        if (strata_ec__shard_path(set, d, data_id, &path, NULL) < 0)
            return STRATA_ENOMEM;
        if (unlink(path) < 0 && errno != ENOENT && errno != ENOTDIR) {
            int e = errno;
            strata_ec__drive_err(set, d, STRATA_DRIVE_IO_REMOVE, e);
            if (rc == 0)
                rc = strata_ec__errno_map(e);
        }
        free(path);
    }
    return rc;
}

/* ---- inline shards ------------------------------------------------------------ */

int strata_ec_inline_encode(const struct strata_set *set, const void *data, size_t len,
                            uint8_t **shards_buf, size_t *shard_len, uint32_t *crcs)
{
    /* 16-byte multiples keep ISA-L on its SIMD path; never 0 so empty
     * objects still have K+M verifiable shards. */
    size_t sl = strata_ec__round_up((len + set->k - 1) / set->k, 16);
    if (sl == 0)
        sl = 16;
    /* Only the data shards' tail needs zeros: the parity shards are
     * written whole by the encode (calloc zeroed all n shards per PUT). */
    uint8_t *buf = malloc((size_t)set->n * sl);
    if (!buf)
        return STRATA_ENOMEM;
    if (len)
        memcpy(buf, data, len);
    memset(buf + len, 0, (size_t)set->k * sl - len);
    uint8_t *shards[STRATA_DRIVES_MAX];
    for (unsigned s = 0; s < set->n; s++)
        shards[s] = buf + (size_t)s * sl;
    strata_ec_encode(set->codec, shards, sl);
    for (unsigned s = 0; s < set->n; s++)
        crcs[s] = strata_crc32c(0, shards[s], sl);
    *shards_buf = buf;
    *shard_len = sl;
    return 0;
}

int strata_ec_inline_decode(struct strata_set *set, const uint8_t *const *shards,
                            const uint32_t *crcs, size_t shard_len, size_t len, void *out)
{
    if (len > shard_len * set->k)
        return STRATA_EINVAL;
    bool present[STRATA_DRIVES_MAX];
    unsigned good = 0;
    bool data_ok = true;
    /* Data shards first: when all K are good the parity shards are not
     * needed, nor their CRCs computed (half the CRC work of a GET on 2+2). */
    for (unsigned s = 0; s < set->n; s++) {
        if (s == set->k && data_ok)
            break;
        present[s] = false;
        if (shards[s]) {
            if (strata_crc32c(0, shards[s], shard_len) == crcs[s]) {
                present[s] = true;
                good++;
            } else {
                STRATA_EC__STAT_ADD(set, bitrot_detected, 1);
            }
        }
        if (s < set->k && !present[s])
            data_ok = false;
    }
    uint8_t *o = out;
    if (data_ok) {
        for (unsigned s = 0; s < set->k && len; s++) {
            size_t n = len < shard_len ? len : shard_len;
            memcpy(o, shards[s], n);
            o += n;
            len -= n;
        }
        return 0;
    }
    if (good < set->k)
        return STRATA_ECORRUPT;
    uint8_t *tmp = malloc((size_t)set->n * shard_len);
    if (!tmp)
        return STRATA_ENOMEM;
    uint8_t *bufs[STRATA_DRIVES_MAX];
    for (unsigned s = 0; s < set->n; s++) {
        bufs[s] = tmp + (size_t)s * shard_len;
        if (present[s])
            memcpy(bufs[s], shards[s], shard_len);
    }
    int rc = strata_ec_reconstruct(set->codec, bufs, present, shard_len);
    if (rc == 0) {
        STRATA_EC__STAT_ADD(set, stripes_reconstructed, 1);
        memcpy(o, tmp, len);
    }
    free(tmp);
    return rc;
}
