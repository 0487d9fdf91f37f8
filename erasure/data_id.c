/*
 * data_id.c - new data ids (16 random bytes): the names of shard files,
 * tmp files and the drive probe's files.  Any thread.
 */
#include "strata/assert.h"
#include "strata/erasure.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <unistd.h>

void strata_data_id_new(uint8_t id[STRATA_DATA_ID_LEN])
{
    if (RAND_bytes(id, STRATA_DATA_ID_LEN) != 1) {
        /* RAND_bytes only fails when the OS entropy source is broken; the
         * contract says this can't fail, so fall back to getrandom-backed
         * arc4random-like reads of /dev/urandom. */
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        STRATA_ASSERT(fd >= 0);
        STRATA_ASSERT(read(fd, id, STRATA_DATA_ID_LEN) == STRATA_DATA_ID_LEN);
        close(fd);
    }
}
