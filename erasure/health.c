/*
 * health.c - drive states (contract in erasure.h, "Drive health"): errno of
 * a failed write -> the drive's state, the error counters by op, and the
 * probe thread that returns a drive to online once writes work again.
 *
 * A drive's state is two ints (relaxed atomics, no lock): fault, set by
 * erasure's own failed writes and cleared by the probe, and store_fault,
 * set and cleared by meta/'s reports on its store.  The probe never runs
 * on a request's path: a thread per set wakes every STRATA_DRIVE_PROBE_MS
 * and probes only the drives in a fault state, so a healthy set costs one
 * wake-up per interval.
 */
#include "ec_internal.h"
#include "strata/hex.h"
#include "strata/thread.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define MOD       "erasure"
#define PROBE_LEN 4096u

const char *strata_drive_state_name(enum strata_drive_state st)
{
    static const char *const names[STRATA_DRIVE_STATES] = {
        "online", "offline", "faulty", "read-only", "full",
    };
    return (unsigned)st < STRATA_DRIVE_STATES ? names[st] : "?";
}

/* errno of a failed write -> the state it means; ONLINE for errors of the
 * process (memory, descriptors, cancelled links), which say nothing about
 * the drive. */
static enum strata_drive_state state_of(int e)
{
    switch (e) {
    case 0:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case EINTR:
    case EAGAIN:
    case ECANCELED:
    case EBADF:
    case EINVAL:
        return STRATA_DRIVE_ONLINE;
    case EROFS:
        return STRATA_DRIVE_READONLY;
    case ENOSPC:
    case EDQUOT:
        return STRATA_DRIVE_FULL;
    default:
        return STRATA_DRIVE_FAULTY;
    }
}

static void count_err(struct strata_set *set, unsigned d, enum strata_drive_io_op op)
{
    __atomic_fetch_add(&set->drives[d].io[op].errors, 1, __ATOMIC_RELAXED);
}

void strata_ec__drive_fault(struct strata_set *set, unsigned d, int e)
{
    enum strata_drive_state st = state_of(e);
    if (d >= set->n || st == STRATA_DRIVE_ONLINE)
        return;
    int was = __atomic_exchange_n(&set->drives[d].fault, (int)st, __ATOMIC_RELAXED);
    if (was != (int)st)
        strata_log(&set->log, STRATA_LOG_ERR, MOD,
                   "drive %s: %s (%s); writes skip it until a probe write succeeds",
                   set->drives[d].path, strata_drive_state_name(st), strerror(e));
}

void strata_ec__drive_err(struct strata_set *set, unsigned d, enum strata_drive_io_op op, int e)
{
    if (d >= set->n)
        return;
    count_err(set, d, op);
    strata_ec__drive_fault(set, d, e);
}

/* A full drive is still tried: the space may come back at any moment (a
 * failed large write frees its own tmp files at once) and ENOSPC costs
 * nothing to find out.  Read-only and faulty ones stay out. */
static bool refuses_writes(int st)
{
    return st == STRATA_DRIVE_READONLY || st == STRATA_DRIVE_FAULTY;
}

bool strata_ec__drive_writable(const struct strata_set *set, unsigned d)
{
    const struct strata_ec__drive *dr = &set->drives[d];
    return dr->online && !refuses_writes(__atomic_load_n(&dr->fault, __ATOMIC_RELAXED)) &&
           !refuses_writes(__atomic_load_n(&dr->store_fault, __ATOMIC_RELAXED));
}

enum strata_drive_state strata_set_drive_state(const struct strata_set *set, unsigned drive)
{
    if (drive >= set->n || !set->drives[drive].online)
        return STRATA_DRIVE_OFFLINE;
    int f = __atomic_load_n(&set->drives[drive].fault, __ATOMIC_RELAXED);
    if (f == 0)
        f = __atomic_load_n(&set->drives[drive].store_fault, __ATOMIC_RELAXED);
    return (enum strata_drive_state)f;
}

void strata_set_drive_store_result(struct strata_set *set, unsigned drive,
                                   enum strata_drive_state st)
{
    if (drive >= set->n || st == STRATA_DRIVE_OFFLINE)
        return;
    if (st != STRATA_DRIVE_ONLINE)
        count_err(set, drive, STRATA_DRIVE_IO_STORE);
    /* The common case, a write that worked on a healthy store: one load. */
    if (__atomic_load_n(&set->drives[drive].store_fault, __ATOMIC_RELAXED) != (int)st)
        __atomic_store_n(&set->drives[drive].store_fault, (int)st, __ATOMIC_RELAXED);
}

/* Write, fsync and unlink a small file in the drive's tmp/: 0 or errno.
 * The name is a tmp leftover like any other, should this thread die
 * between create and unlink (reclaimed at open or by age). */
static int probe_write(const struct strata_set *set, unsigned d)
{
    uint8_t r[STRATA_DATA_ID_LEN];
    char rnd[17], p[4096];
    strata_data_id_new(r);
    strata_hex_encode(r, 8, rnd);
    snprintf(p, sizeof(p), "%s/tmp/probe.%s", set->drives[d].path, rnd);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ENOENT) {
        /* tmp/ removed under a running daemon: made again, as heal does
         * (a vanished drive root stays missing). */
        char t[4096];
        snprintf(t, sizeof(t), "%s/tmp", set->drives[d].path);
        if (mkdir(t, 0755) == 0 || errno == EEXIST)
            fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        else
            errno = ENOENT;
    }
    if (fd < 0)
        return errno;
    static const uint8_t zero[PROBE_LEN];
    int e = 0;
    ssize_t n = pwrite(fd, zero, sizeof(zero), 0);
    if (n != (ssize_t)sizeof(zero))
        e = n < 0 ? errno : ENOSPC;
    else if (!set->no_fsync && fsync(fd) < 0)
        e = errno;
    close(fd);
    if (unlink(p) < 0 && e == 0)
        e = errno;
    return e;
}

/* Probe drive d, in a fault state: back to online when the probe works (a
 * full drive also needs room for a few shard blocks, or the next PUT would
 * fill it again at once). */
static void probe_drive(struct strata_set *set, unsigned d)
{
    struct strata_ec__drive *dr = &set->drives[d];
    int was = __atomic_load_n(&dr->fault, __ATOMIC_RELAXED);
    int e = probe_write(set, d);
    if (e == 0 && was == STRATA_DRIVE_FULL) {
        struct statvfs vfs;
        if (statvfs(dr->path, &vfs) == 0 &&
            (uint64_t)vfs.f_bavail * vfs.f_frsize < 4 * (uint64_t)set->shard_size)
            return; /* still full: not an I/O error */
    }
    if (e != 0) {
        strata_ec__drive_err(set, d, STRATA_DRIVE_IO_PROBE, e);
        return;
    }
    /* Only a fault this probe saw is cleared: a newer one stays. */
    if (__atomic_compare_exchange_n(&dr->fault, &was, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        strata_log(&set->log, STRATA_LOG_NOTICE, MOD, "drive %s: writes work again (was %s)",
                   dr->path, strata_drive_state_name((enum strata_drive_state)was));
}

static void *probe_main(void *arg)
{
    struct strata_set *set = arg;
    pthread_setname_np(pthread_self(), "strata-ec-probe");
    pthread_mutex_lock(&set->probe_mu);
    while (!set->probe_stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += STRATA_DRIVE_PROBE_MS / 1000;
        until.tv_nsec += (long)(STRATA_DRIVE_PROBE_MS % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!set->probe_stop &&
               pthread_cond_timedwait(&set->probe_cv, &set->probe_mu, &until) != ETIMEDOUT)
            ;
        if (set->probe_stop)
            break;
        pthread_mutex_unlock(&set->probe_mu);
        for (unsigned d = 0; d < set->n; d++)
            if (set->drives[d].online && __atomic_load_n(&set->drives[d].fault, __ATOMIC_RELAXED))
                probe_drive(set, d);
        pthread_mutex_lock(&set->probe_mu);
    }
    pthread_mutex_unlock(&set->probe_mu);
    return NULL;
}

int strata_ec__probe_start(struct strata_set *set)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&set->probe_mu, NULL);
    pthread_cond_init(&set->probe_cv, &ca);
    pthread_condattr_destroy(&ca);
    set->probe_stop = false;
    if (pthread_create(&set->probe_th, NULL, probe_main, set) != 0) {
        pthread_mutex_destroy(&set->probe_mu);
        pthread_cond_destroy(&set->probe_cv);
        return STRATA_ENOMEM;
    }
    set->probe_started = true;
    return 0;
}

void strata_ec__probe_stop(struct strata_set *set)
{
    if (!set->probe_started)
        return;
    strata_thread_stop(set->probe_th, &set->probe_mu, &set->probe_cv, &set->probe_stop);
    pthread_mutex_destroy(&set->probe_mu);
    pthread_cond_destroy(&set->probe_cv);
    set->probe_started = false;
}
