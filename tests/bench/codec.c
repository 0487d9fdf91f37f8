/*
 * codec.c - benchmark (a program, not a test): ISA-L encode and decode
 * throughput on one core for 2+2, 4+2 and 8+4 at the default shard size
 * (ceil(1 MiB / K) rounded up to 4 KiB), decode with 1 and with M data
 * shards erased.  GB/s counts object (data) bytes, as a PUT or GET sees
 * them.  Usage: bench_codec [seconds per cell, default 1] [scratch dir].
 * With a scratch dir it also times the whole shard path (writer: encode,
 * CRC, io_uring O_DIRECT writes, fsync, rename; reader: reads, CRC check)
 * for one 256 MiB object on a 4+2 set of six directories there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata/erasure.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t shard_size_for(unsigned k)
{
    size_t s = (STRATA_EC_BLOCK_SIZE_DEFAULT + k - 1) / k;
    return (s + 4095) / 4096 * 4096;
}

/* Returns GB/s of object data; erased == 0 means encode. */
static double run(struct strata_ec_codec *c, unsigned k, unsigned m, uint8_t **shards, size_t ss,
                  unsigned erased, double secs)
{
    bool present[STRATA_DRIVES_MAX];
    for (unsigned i = 0; i < k + m; i++)
        present[i] = !(i < erased); /* erase the first data shards: the costly case */
    unsigned iters = 0;
    double t0 = now_s(), t;
    do {
        for (int j = 0; j < 16; j++) {
            if (erased == 0)
                strata_ec_encode(c, shards, ss);
            else if (strata_ec_reconstruct(c, shards, present, ss) != 0)
                abort();
        }
        iters += 16;
        t = now_s() - t0;
    } while (t < secs);
    return (double)iters * (double)(k * ss) / t / 1e9;
}

static int io_bench(const char *dir)
{
    char paths[6][4096];
    const char *pp[6];
    for (int i = 0; i < 6; i++) {
        snprintf(paths[i], sizeof(paths[i]), "%s/bench-d%d", dir, i);
        pp[i] = paths[i];
    }
    struct strata_set_opts o = {.m = 2, .direct_io = true};
    struct strata_set *s;
    struct strata_errinfo ei;
    if (strata_set_open(pp, 6, &o, &s, &ei) != 0) {
        fprintf(stderr, "set open: %s\n", ei.msg);
        return 1;
    }
    const size_t total = (size_t)256 << 20, piece = (size_t)1 << 20;
    uint8_t *buf = malloc(piece);
    for (size_t i = 0; i < piece; i++)
        buf[i] = (uint8_t)(i * 2654435761u >> 13);
    uint8_t id[STRATA_DATA_ID_LEN];
    strata_data_id_new(id);
    struct strata_ec_writer *w;
    uint32_t mask;
    double t0 = now_s();
    if (strata_ec_writer_create(s, id, &w) != 0)
        return 1;
    for (size_t off = 0; off < total; off += piece)
        if (strata_ec_writer_write(w, buf, piece) != 0)
            return 1;
    if (strata_ec_writer_finish(w, &mask) != 0)
        return 1;
    strata_ec_writer_destroy(w);
    double tw = now_s() - t0;
    struct strata_ec_reader *r;
    t0 = now_s();
    if (strata_ec_reader_open(s, id, total, &r) != 0)
        return 1;
    for (size_t off = 0; off < total; off += piece)
        if (strata_ec_reader_read(r, off, buf, piece) != 0)
            return 1;
    strata_ec_reader_close(r);
    double tr = now_s() - t0;
    printf("shard path 4+2, 256 MiB object: write %.2f GB/s (incl. fsync), read %.2f GB/s "
           "(O_DIRECT %s, read ahead one stripe)\n",
           (double)total / tw / 1e9, (double)total / tr / 1e9, "where the drive allows");
    strata_ec_delete(s, id);
    strata_set_close(s);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    static const unsigned geo[][2] = {{2, 2}, {4, 2}, {8, 4}};
    printf("ISA-L RS codec, one core, %.1f s per cell, GB/s of object data\n", secs);
    printf("%-6s %10s %10s %12s %12s\n", "K+M", "shard", "encode", "decode(1)", "decode(M)");
    for (unsigned g = 0; g < 3; g++) {
        unsigned k = geo[g][0], m = geo[g][1];
        size_t ss = shard_size_for(k);
        struct strata_ec_codec *c;
        if (strata_ec_codec_create(k, m, &c) != 0)
            return 1;
        uint8_t *shards[STRATA_DRIVES_MAX];
        for (unsigned i = 0; i < k + m; i++) {
            if (posix_memalign((void **)&shards[i], 4096, ss))
                return 1;
            for (size_t b = 0; b < ss; b++)
                shards[i][b] = (uint8_t)(b * 131 + i * 7);
        }
        double enc = run(c, k, m, shards, ss, 0, secs);
        double d1 = run(c, k, m, shards, ss, 1, secs);
        double dm = run(c, k, m, shards, ss, m, secs);
        char name[16];
        snprintf(name, sizeof(name), "%u+%u", k, m);
        printf("%-6s %9zuK %10.2f %12.2f %12.2f\n", name, ss / 1024, enc, d1, dm);
        for (unsigned i = 0; i < k + m; i++)
            free(shards[i]);
        strata_ec_codec_destroy(c);
    }
    return argc > 2 ? io_bench(argv[2]) : 0;
}
