/*
 * key_order.h - one key's queued changes in the order they committed.
 * Every handler that commits a change of a key (a new version, a delete
 * marker or a version delete, tags, retention, legal hold, ACL) and then
 * queues it for replication (repl_hooks.h) or as an event (notify.h)
 * holds this around the commit and the queueing: two requests on one key
 * commit in one order and would otherwise queue in the other, and the
 * target would end with the older change last (a replication target that
 * keeps no version ids makes it its latest; an event's sequencer would go
 * backwards).  Per daemon only: across gateways on one RADOS cluster
 * replication delivers in index order instead (server/repl/README.md,
 * "Two gateways on one RADOS cluster"), and events are delivered in
 * per-gateway order but carry sequencers in index order (the commit's
 * change stamp: server/notify/README.md, "Sequencers").
 *
 * Threads: any request thread.
 */
#ifndef STRATA_SERVER_S3_KEY_ORDER_H
#define STRATA_SERVER_S3_KEY_ORDER_H

struct strata_req;

/* Before the commit: a lock striped by r's bucket and key, taken when the
 * bucket has a replication or notification configuration this daemon
 * acts on (else NULL, nothing held).  Release it once the change is
 * queued, or the commit failed; never hold two. */
void *strata_key_order_hold(struct strata_req *r, const char *key);
void strata_key_order_release(void *hold); /* NULL is a no-op */

#endif /* STRATA_SERVER_S3_KEY_ORDER_H */
