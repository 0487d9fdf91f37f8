/*
 * index.h - names in a bucket's index shards (RADOS.md, "Keys of an index
 * shard"): shared by key.c (commits) and scan.c (listings).
 */
#ifndef STRATA_META_RADOS_INDEX_H
#define STRATA_META_RADOS_INDEX_H

#include <stddef.h>
#include <stdint.h>

#define RADOS_IDX_BITS 3 /* g: 8 shards per bucket (RADOS.md, "Sharding") */
#define RADOS_IDX_SHARDS (1u << RADOS_IDX_BITS)
#define RADOS_IDX_GEN 0
/* An escaped key is at most twice the raw key, plus the kind, the end
 * byte and a 32-hex sort key. */
#define RADOS_IKEY_MAX (2 + 2 * 1024 + 1 + 32 + 2)
#define RADOS_LAYOUT_KEY "\x01layout"

/* idx.INC.G.S of the shard that holds key. */
void strata_meta__rados_idx_oid(char oid[48], uint64_t inc, unsigned shard);
unsigned strata_meta__rados_idx_shard(const char *key, size_t len);
/* kind ('h', 'o') '/' + the escaped key[0..n) (no end byte): a prefix. */
size_t strata_meta__rados_ikey_prefix(char *out, char kind, const char *key, size_t n);
/* The same with the end byte: the start of every entry of that one key. */
size_t strata_meta__rados_ikey(char *out, char kind, const char *key, size_t n);
/* Unescape the key part of an index key (after "X/"), up to its end byte:
 * returns its length (key NUL-terminated) and sets *rest past the end
 * byte; 0 with *rest NULL when malformed. */
size_t strata_meta__rados_ikey_parse(const char *ik, char *key, size_t cap, const char **rest);
/* kind '/' + the escaped key + the end byte + sk as 32 hex: a version's
 * o/ key or a transition intent's x/ key. */
size_t strata_meta__rados_skey(char *out, char kind, const char *key, size_t n,
                               const uint8_t sk[16]);
/* 16 lowercase hex digits of v: ordered values compare right as bytes
 * (an OSD's omap_cmp compares bytes as signed chars: RADOS.md). */
void strata_meta__rados_hex16(uint64_t v, char out[17]);
/* The due index: e/ + the version's mtime (ns, 16 hex) + 0x01 + the
 * escaped key + the end byte + sk (32 hex); keys sort oldest first. */
#define RADOS_EKEY_MAX (2 + 16 + 1 + 2 * 1024 + 1 + 32 + 2)
size_t strata_meta__rados_ekey(char *out, const char *key, size_t n, const uint8_t sk[16]);
/* e/ + 16 hex of ns: where the entries of versions of mtime ns start. */
size_t strata_meta__rados_ekey_time(char *out, uint64_t ns);
/* An e/ key back: the key's length (key NUL-terminated), mtime and sort
 * key; 0 when malformed. */
size_t strata_meta__rados_ekey_parse(const char *ek, char *key, size_t cap, uint64_t *ns,
                                     uint8_t sk[16]);
/* 32 lowercase hex characters of a sort key, and back (false: malformed). */
void strata_meta__rados_sk_hex(const uint8_t sk[16], char out[33]);
int strata_meta__rados_sk_parse(const char *hex, uint8_t sk[16]);

/* Omap entries the scans of this process read (tests). */
uint64_t strata_meta__rados_scan_visited(void);
/* Scans of this process that continued on a page's stashed read-ahead (tests). */
uint64_t strata_meta__rados_scan_stash_hits(void);

#endif /* STRATA_META_RADOS_INDEX_H */
