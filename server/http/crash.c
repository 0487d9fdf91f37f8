/*
 * crash.c - on a fatal signal, write the requests in flight (id, method,
 * bucket, key, bytes so far) to stderr before dying, so a crash report
 * says what the daemon was doing.  Requests register in a fixed slot table
 * (lock-free: one CAS to claim, one store to release) from their
 * connection thread; the handler only reads it and uses write(2).
 */
#include "request.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#define CRASH_SLOTS 1024

static struct strata_req *_Atomic slots[CRASH_SLOTS];

/* Each thread starts its search in a region of its own, and only reads a
 * taken slot, so the event threads do not write to the same cache lines
 * of the table for every request. */
#define CRASH_REGION 128
static atomic_uint crash_threads;

int strata_crash_register(struct strata_req *r)
{
    static __thread int start = -1;
    if (start < 0)
        start = (int)((atomic_fetch_add(&crash_threads, 1) * CRASH_REGION) % CRASH_SLOTS);
    for (int k = 0; k < CRASH_SLOTS; k++) {
        int i = (start + k) % CRASH_SLOTS;
        if (atomic_load_explicit(&slots[i], memory_order_relaxed))
            continue; /* taken: look without writing */
        struct strata_req *expect = NULL;
        if (atomic_compare_exchange_strong(&slots[i], &expect, r))
            return i;
    }
    return -1; /* table full: this request just is not reported */
}

void strata_crash_unregister(int slot)
{
    if (slot >= 0 && slot < CRASH_SLOTS)
        atomic_store(&slots[slot], NULL);
}

static void put(const char *s)
{
    ssize_t w = write(2, s, strlen(s));
    (void)w;
}

static void put_u64(uint64_t v)
{
    char buf[24];
    int i = (int)sizeof(buf) - 1;
    buf[i] = '\0';
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v && i > 0);
    put(buf + i);
}

static void fatal_cb(int sig)
{
    put("strata: fatal signal ");
    put_u64((uint64_t)sig);
    put("; requests in flight:\n");
    for (int i = 0; i < CRASH_SLOTS; i++) {
        struct strata_req *r = atomic_load(&slots[i]);
        if (!r)
            continue;
        put("  ");
        put(r->id);
        put(" ");
        put(r->method ? r->method : "-");
        put(" /");
        put(r->bucket ? r->bucket : "");
        put("/");
        put(r->key ? r->key : "");
        put(" in=");
        put_u64(r->bytes_in);
        put(" out=");
        put_u64(r->bytes_out);
        put("\n");
    }
    /* SA_RESETHAND restored the default action: die the normal way. */
    raise(sig);
}

void strata_crash_install(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return; /* the sanitizer's own handler reports more (stack, shadow) */
#endif
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fatal_cb;
    sa.sa_flags = (int)SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
}
