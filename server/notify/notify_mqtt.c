/*
 * notify_mqtt.c - the MQTT target: ADDRESS is mqtt://[USER@]HOST:PORT/TOPIC
 * (TOPIC may hold '/', no wildcards).  Each event's JSON is published with
 * QoS 1 and counts as delivered when the broker's PUBACK arrives.  The
 * password is the target's token file (a USER without one connects with
 * the user name only).  libmosquitto driven synchronously by this thread
 * (mosquitto_loop, no thread of its own); the connection is made again
 * after any error.  Delivery thread only.
 */
#include "notify_addr.h"
#include "notify_session.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mosquitto.h>

#define WAIT_MS 5000

struct mtarget {
    struct strata_notify_session s; /* connected: CONNACK accepted */
    struct mosquitto *m;
    int connack;  /* -1: none yet */
    int want_mid; /* the publish awaiting its PUBACK */
    bool acked;
    struct strata_notify_addr a;
};

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_init(void)
{
    mosquitto_lib_init(); /* process-wide; never cleaned up */
}

static void on_connect(struct mosquitto *m, void *ud, int rc)
{
    (void)m;
    ((struct mtarget *)ud)->connack = rc;
}

static void on_publish(struct mosquitto *m, void *ud, int mid)
{
    (void)m;
    struct mtarget *t = ud;
    if (mid == t->want_mid)
        t->acked = true;
}

static void mt_disconnect(void *h)
{
    struct mtarget *t = h;
    if (t->m)
        mosquitto_destroy(t->m);
    t->m = NULL;
}

static int mt_setup(void *h, const char *address)
{
    struct mtarget *t = h;
    if (strata_notify_addr_parse(address, "mqtt", &t->a) != 0 || strpbrk(t->a.path, "+#") ||
        mosquitto_pub_topic_check(t->a.path) != MOSQ_ERR_SUCCESS)
        return STRATA_NOTIFY_BAD_ADDRESS;
    pthread_once(&lib_once, lib_init);
    return 0;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Runs the client until *flag or WAIT_MS: whether flag was set. */
static bool loop_until(struct mtarget *t, const bool *flag)
{
    uint64_t end = now_ms() + WAIT_MS;
    while (!*flag && now_ms() < end)
        if (mosquitto_loop(t->m, 100, 1) != MOSQ_ERR_SUCCESS)
            return false;
    return *flag;
}

static bool mt_alive(void *h)
{
    /* Idle since the last event: a broker that closed the connection
     * meanwhile is noticed here, not by a failed publish. */
    return mosquitto_loop(((struct mtarget *)h)->m, 0, 1) == MOSQ_ERR_SUCCESS;
}

static bool mt_connect(void *h)
{
    struct mtarget *t = h;
    char cid[64];
    snprintf(cid, sizeof(cid), "strata-%p-%llx", (void *)t, (unsigned long long)now_ms());
    if (!(t->m = mosquitto_new(cid, true, t))) /* clean session: Strata's queue is the state */
        return false;
    mosquitto_connect_callback_set(t->m, on_connect);
    mosquitto_publish_callback_set(t->m, on_publish);
    if (t->a.user[0] && mosquitto_username_pw_set(t->m, t->a.user, t->s.password) != 0)
        goto fail;
    t->connack = -1;
    if (mosquitto_connect(t->m, t->a.host, t->a.port, 30) != MOSQ_ERR_SUCCESS)
        goto fail;
    uint64_t end = now_ms() + WAIT_MS;
    while (t->connack < 0 && now_ms() < end)
        if (mosquitto_loop(t->m, 100, 1) != MOSQ_ERR_SUCCESS)
            goto fail;
    if (t->connack != 0) /* refused (bad password, ...) or no answer */
        goto fail;
    return true;
fail:
    mt_disconnect(t);
    return false;
}

static int mt_send(void *h, const char *msg, size_t len)
{
    struct mtarget *t = h;
    if (!strata_notify_session_ready(h))
        return -1;
    int mid = 0;
    t->acked = false;
    t->want_mid = -1;
    if (mosquitto_publish(t->m, &mid, t->a.path, (int)len, msg, 1, false) != MOSQ_ERR_SUCCESS) {
        strata_notify_session_drop(h);
        return -1;
    }
    t->want_mid = mid;
    if (!loop_until(t, &t->acked)) {
        strata_notify_session_drop(h); /* the next attempt publishes it again */
        return -1;
    }
    return 0;
}

static const struct strata_notify_session_kind mqtt_session = {
    sizeof(struct mtarget), "mqtt://[USER@]HOST:PORT/TOPIC (no wildcards)", NULL, NULL,
    mt_setup, mt_connect, mt_alive, mt_disconnect, NULL};

const struct strata_notify_kind strata_notify_mqtt = {
    "mqtt", strata_notify_session_open, mt_send, strata_notify_session_close, NULL, &mqtt_session};
