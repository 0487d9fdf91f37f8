/*
 * secret.h - freeing memory that held secrets (keys, passwords, tokens):
 * wiped with OPENSSL_cleanse first, so the bytes do not outlive their use
 * in freed heap.  Any thread.
 */
#ifndef STRATA_SERVER_SECRET_H
#define STRATA_SERVER_SECRET_H

#include <stddef.h>

/* p's len bytes wiped, then p freed (NULL: nothing). */
void strata_secret_free(void *p, size_t len);
/* The same for a NUL-terminated string. */
void strata_secret_str_free(char *s);

#endif /* STRATA_SERVER_SECRET_H */
