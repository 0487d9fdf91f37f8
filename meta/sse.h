/*
 * sse.h - the chunked AES-256-GCM format of encrypted object data (private
 * to meta/).
 *
 * Encrypted objects are stored as ciphertext: erasure coding, bitrot
 * checks, healing and tier moves see only these bytes and never need a
 * key.  The plaintext is cut into chunks of SSE_CHUNK bytes (the last one
 * may be shorter, never empty); each chunk is sealed on its own, so a
 * ranged read decrypts only the chunks it touches.
 *
 * Stream layout (one per object, or per part of a multipart object):
 *
 *   OFFSET                 SIZE              DESCRIPTION
 *   i * (SSE_CHUNK + 16)   len_i             chunk i ciphertext (AES-256-GCM)
 *   ... + len_i            16                chunk i GCM tag
 *
 *   len_i = SSE_CHUNK for every chunk but the last; an empty plaintext
 *   is an empty stream (nothing to seal).
 *
 * Per chunk nonce (12 bytes) and additional authenticated data (14 bytes):
 *
 *   OFFSET  SIZE  DESCRIPTION
 *   nonce:
 *   0       4     stream number, big-endian (0 for a single-part object,
 *                 the part number of a multipart part)
 *   4       8     chunk index i, big-endian
 *   AAD:
 *   0       1     format version SSE_FORMAT (1)
 *   1       1     1 for the last chunk of the stream, else 0
 *   2       4     stream number, big-endian
 *   6       8     chunk index i, big-endian
 *
 * The key is the object's own 256-bit key (the caller guarantees that a
 * key is used for one object only, so nonces never repeat under a key).
 * Binding the index and the "last" flag detects reordered, dropped and
 * truncated chunks; the stream number detects parts swapped between
 * streams.  The record keeps the plaintext size, from which the stream
 * layout follows (strata_sse__stream_size).
 *
 * Thread: a context is used by one thread at a time.
 */
#ifndef STRATA_META_SSE_H
#define STRATA_META_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SSE_FORMAT 1
#define SSE_CHUNK 65536u
#define SSE_TAG 16u
#define SSE_KEY_LEN 32u
#define SSE_CCHUNK (SSE_CHUNK + SSE_TAG) /* stored bytes of a full chunk */

struct sse_ctx;

/* STRATA_ENOMEM / STRATA_EINTERNAL; destroy with strata_sse__destroy. */
int strata_sse__create(const uint8_t key[SSE_KEY_LEN], uint32_t stream, struct sse_ctx **out);
void strata_sse__destroy(struct sse_ctx *c); /* NULL is a no-op */

/* Stored size of a stream holding pt_size plaintext bytes.  Can't fail. */
uint64_t strata_sse__stream_size(uint64_t pt_size);
/* Number of chunks of a pt_size stream.  Can't fail. */
uint64_t strata_sse__nchunks(uint64_t pt_size);

/* Seal chunk idx (1..SSE_CHUNK bytes; only the last may be short) into
 * out (len + SSE_TAG bytes).  STRATA_EINTERNAL on an OpenSSL failure. */
int strata_sse__seal(struct sse_ctx *c, uint64_t idx, bool last, const uint8_t *pt, size_t len,
                     uint8_t *out);
/* Open chunk idx of clen stored bytes (ciphertext + tag) into out
 * (clen - SSE_TAG bytes).  STRATA_ECORRUPT when the tag does not verify:
 * wrong key, tampered, moved or truncated data. */
int strata_sse__open(struct sse_ctx *c, uint64_t idx, bool last, const uint8_t *in, size_t clen,
                     uint8_t *out);

/* The chunks [*c0, *c1] that hold plaintext [off, off + len) of a pt_size
 * stream (len > 0, off + len <= pt_size), and their stored byte range. */
void strata_sse__range(uint64_t pt_size, uint64_t off, uint64_t len, uint64_t *c0, uint64_t *c1,
                       uint64_t *soff, uint64_t *slen);



/* ---- streams: what the object layer calls ------------------------------- */

/* Receives stored (sealed) bytes in order; returns 0 or a STRATA_E* code. */
typedef int (*sse_emit_fn)(void *ud, const uint8_t *buf, size_t len);
/* Reads len stored bytes at stored offset off; 0 or a STRATA_E* code. */
typedef int (*sse_read_fn)(void *ud, uint64_t off, void *buf, size_t len);

/* Encrypting writer: plaintext in, sealed chunks out through emit.  A
 * full chunk is sealed only when more plaintext follows it (or at finish,
 * as the last one).  Errors from emit are returned as is. */
struct sse_writer;
int strata_sse__writer_create(const uint8_t key[SSE_KEY_LEN], uint32_t stream,
                              struct sse_writer **out);
int strata_sse__writer_write(struct sse_writer *w, const void *buf, size_t len, sse_emit_fn emit,
                             void *ud);
int strata_sse__writer_finish(struct sse_writer *w, sse_emit_fn emit, void *ud);
void strata_sse__writer_destroy(struct sse_writer *w); /* NULL is a no-op */

/* Decrypting reader over one stream of pt_size plaintext bytes: reads
 * plaintext [off, off + len) by reading and opening only the chunks that
 * hold it (the last opened chunk is kept for the next call).
 * STRATA_ECORRUPT when a chunk fails to authenticate; read errors as is. */
struct sse_reader;
int strata_sse__reader_create(const uint8_t key[SSE_KEY_LEN], uint32_t stream, uint64_t pt_size,
                              struct sse_reader **out);
int strata_sse__reader_read(struct sse_reader *r, uint64_t off, void *buf, size_t len,
                            sse_read_fn read, void *ud);
void strata_sse__reader_destroy(struct sse_reader *r); /* NULL is a no-op */
#endif
