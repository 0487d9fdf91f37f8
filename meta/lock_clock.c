/*
 * lock_clock.c - the retention clock object lock judges by.
 *
 * lock now = start_ms + (CLOCK_BOOTTIME now - CLOCK_BOOTTIME at open), where
 * start_ms = max(wall clock at open, persisted high-water mark).  Setting
 * the system clock (settimeofday, clock_settime, NTP steps) does not move
 * CLOCK_BOOTTIME, so a retention period cannot be released early by setting
 * the clock forward while the daemon runs; and since start_ms is never below
 * the mark, the clock never runs backwards across restarts.
 *
 * The mark is the store's (store.h: clock_mark_read/advance; locally the
 * DRIVE/lock-clock files of local/clock_mark.c), advanced every
 * STRATA_LOCK_CLOCK_PERSIST_MS and at close.  This file only decides what
 * the clock says and when it jumped.
 *
 * Clock jumps: at open, a wall clock more than STRATA_LOCK_CLOCK_START_GAP_MS
 * past the mark, or behind it by more than STRATA_LOCK_CLOCK_STEP_MS; while
 * running, a change of (wall - lock clock) by more than
 * STRATA_LOCK_CLOCK_STEP_MS between two ticks.  Each is logged at WARN and
 * written to the audit log as "ClockJump" through the note function start
 * is given (audit.c's), so the clock does not call up into the log that
 * timestamps its entries with it.
 *
 * Threads: strata_meta_lock_now_ms reads fields fixed at open, from any
 * thread.  One background thread persists the mark and watches the wall
 * clock; it is started by open and joined by close.
 */
#include "meta_internal.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <poll.h>
#include <sys/eventfd.h>

#include "strata/assert.h"

struct meta_lock_clock {
    int64_t start_ms;
    int64_t boot0_ns;
    int64_t last_off_ms; /* wall - lock at the last check (thread only) */
    int64_t wall0_ms, mark_ms; /* at open; mark_ms -1 when none */
    int peers;                 /* running gateways that gave their clocks at open */
    pthread_t thr;
    bool thr_started;
    /* close writes it to stop the thread.  The thread sleeps in poll(), not
     * pthread_cond_timedwait: libfaketime (used to test this very clock)
     * breaks timed waits on CLOCK_MONOTONIC condition variables. */
    int stop_fd;
    strata_meta__note_fn *note; /* records a jump in the audit log (start's caller) */
};

static int64_t ts_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void strata_meta__iso8601(int64_t ms, char out[32])
{
    time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    int frac = (int)(ms - (int64_t)t * 1000);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03dZ", frac % 1000);
}

static int64_t wall_ms(void)
{
    return ts_ns(CLOCK_REALTIME) / 1000000;
}

int64_t strata_meta_lock_now_ms(struct strata_meta *m)
{
    const struct meta_lock_clock *c = m->lock_clock;
    return c->start_ms + (ts_ns(CLOCK_BOOTTIME) - c->boot0_ns) / 1000000;
}

/* ---- the mark ---------------------------------------------------------- */

static void mark_persist(struct strata_meta *m)
{
    /* Failures are the store's to log; the next tick tries again. */
    (void)m->store->clock_mark_advance(m, strata_meta_lock_now_ms(m));
}

/* ---- jumps -------------------------------------------------------------- */

static void jump_record(struct strata_meta *m, const char *what, int64_t wall, int64_t lock)
{
    char w[32], l[32], detail[256];
    strata_meta__iso8601(wall, w);
    strata_meta__iso8601(lock, l);
    snprintf(detail, sizeof(detail), "%s: wall clock %s, lock clock %s (wall - lock = %+.3f s)",
             what, w, l, (double)(wall - lock) / 1000.0);
    strata_log(&m->log, STRATA_LOG_WARN, "meta", "ClockJump %s; retention is judged by the lock clock",
               detail);
    m->lock_clock->note(m, "ClockJump", "detected", detail);
}

static void *clock_thread(void *arg)
{
    struct strata_meta *m = arg;
    struct meta_lock_clock *c = m->lock_clock;
    for (;;) {
        struct pollfd p = {.fd = c->stop_fd, .events = POLLIN};
        int64_t due = ts_ns(CLOCK_BOOTTIME) + (int64_t)STRATA_LOCK_CLOCK_PERSIST_MS * 1000000;
        for (;;) {
            int64_t left = (due - ts_ns(CLOCK_BOOTTIME)) / 1000000;
            if (left <= 0)
                break;
            if (poll(&p, 1, (int)left) > 0)
                return NULL; /* close asked us to stop */
        }
        int64_t lock = strata_meta_lock_now_ms(m), wall = wall_ms();
        int64_t off = wall - lock, step = off - c->last_off_ms;
        if (step > STRATA_LOCK_CLOCK_STEP_MS || step < -STRATA_LOCK_CLOCK_STEP_MS) {
            c->last_off_ms = off;
            /* One step, or slow drift summed since the last report. */
            jump_record(m, step > 0 ? "wall clock moved forward while running"
                                    : "wall clock moved back while running",
                        wall, lock);
        }
        mark_persist(m);
    }
}

/* ---- open / close ------------------------------------------------------- */

int strata_meta__lock_clock_open(struct strata_meta *m)
{
    struct meta_lock_clock *c = calloc(1, sizeof(*c));
    if (!c)
        return STRATA_ENOMEM;
    c->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (c->stop_fd < 0) {
        free(c);
        return STRATA_ENOMEM;
    }

    c->mark_ms = m->store->clock_mark_read(m);
    /* Gateways already running on the store (RADOS): start from their
     * clocks, whatever this host's wall clock says (RADOS.md, "Retention
     * clock"); only when none answers does the wall clock count. */
    int64_t peers_ms = -1;
    int peers = m->store->clock_peers ? m->store->clock_peers(m, &peers_ms) : 0;
    c->peers = peers > 0 ? peers : 0;
    c->boot0_ns = ts_ns(CLOCK_BOOTTIME);
    c->wall0_ms = wall_ms();
    if (c->peers)
        c->start_ms = peers_ms > c->mark_ms ? peers_ms : c->mark_ms;
    else
        c->start_ms = c->wall0_ms > c->mark_ms ? c->wall0_ms : c->mark_ms;
    c->last_off_ms = c->wall0_ms - c->start_ms;
    m->lock_clock = c;
    return 0;
}

int strata_meta__lock_clock_start(struct strata_meta *m, strata_meta__note_fn *note)
{
    struct meta_lock_clock *c = m->lock_clock;
    c->note = note;
    int64_t wall = c->wall0_ms, mark = c->mark_ms;
    if (c->peers) {
        int64_t gap = wall - c->start_ms;
        if (gap > STRATA_LOCK_CLOCK_START_GAP_MS || gap < -STRATA_LOCK_CLOCK_STEP_MS)
            jump_record(m, "at open the wall clock differs from the lock clock of the "
                           "gateways running on the store; the lock clock continues from theirs",
                        wall, c->start_ms);
    } else if (mark < 0 && m->store->audit_last_seq(m) > 0) {
        /* Marks removed (or lost on too many drives): the clock can only
         * start at the wall clock, which must not go unseen. */
        jump_record(m, "at open no lock clock mark on the write quorum of drives although the "
                       "audit log has entries; the lock clock starts at the wall clock",
                    wall, wall);
    } else if (mark < 0) {
        strata_log(&m->log, STRATA_LOG_INFO, "meta", "lock clock: no mark yet, starts at the wall clock");
    } else if (wall - mark > STRATA_LOCK_CLOCK_START_GAP_MS) {
        jump_record(m, "at open the wall clock is past the last persisted lock clock "
                       "(downtime, or the clock was set forward)",
                    wall, mark);
    } else if (mark - wall > STRATA_LOCK_CLOCK_STEP_MS) {
        jump_record(m, "at open the wall clock is behind the last persisted lock clock; "
                       "the lock clock continues from it",
                    wall, mark);
    }
    mark_persist(m);
    if (pthread_create(&c->thr, NULL, clock_thread, m) != 0)
        return STRATA_ENOMEM;
    c->thr_started = true;
    return 0;
}

void strata_meta__lock_clock_close(struct strata_meta *m)
{
    struct meta_lock_clock *c = m->lock_clock;
    if (!c)
        return;
    if (c->thr_started) {
        uint64_t one = 1;
        ssize_t w = write(c->stop_fd, &one, sizeof(one)); /* an eventfd write can't fail here */
        STRATA_ASSERT(w == (ssize_t)sizeof(one));
        pthread_join(c->thr, NULL);
    }
    mark_persist(m);
    close(c->stop_fd);
    free(c);
    m->lock_clock = NULL;
}
