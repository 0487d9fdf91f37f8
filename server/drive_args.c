/*
 * drive_args.c - see drive_args.h.
 */
#include "drive_args.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Finds the first "{x...y}" in arg; fills positions and bounds. */
static int find_range(const char *arg, const char **lb, const char **rb, char *lo, char *hi,
                      size_t cap)
{
    const char *l = strchr(arg, '{');
    if (!l)
        return 0;
    const char *dots = strstr(l, "...");
    const char *r = strchr(l, '}');
    if (!dots || !r || dots > r)
        return -1;
    size_t nlo = (size_t)(dots - l - 1), nhi = (size_t)(r - dots - 3);
    if (nlo == 0 || nhi == 0 || nlo >= cap || nhi >= cap)
        return -1;
    memcpy(lo, l + 1, nlo);
    lo[nlo] = '\0';
    memcpy(hi, dots + 3, nhi);
    hi[nhi] = '\0';
    *lb = l;
    *rb = r;
    return 1;
}

int strata_drive_args_expand(const char *arg, char **out, size_t *n, size_t max)
{
    const char *lb, *rb;
    char lo[32], hi[32];
    int f = find_range(arg, &lb, &rb, lo, hi, sizeof(lo));
    if (f < 0)
        return -1;
    if (f == 0) {
        if (*n >= max)
            return -1;
        out[*n] = strdup(arg);
        if (!out[*n])
            return -1;
        (*n)++;
        return 0;
    }
    bool alpha = isalpha((unsigned char)lo[0]) && !lo[1] && isalpha((unsigned char)hi[0]) && !hi[1];
    long a, b;
    int width = 0;
    if (alpha) {
        a = lo[0];
        b = hi[0];
    } else {
        char *e1, *e2;
        a = strtol(lo, &e1, 10);
        b = strtol(hi, &e2, 10);
        if (*e1 || *e2 || a < 0)
            return -1;
        if (lo[0] == '0' && lo[1])
            width = (int)strlen(lo); /* {01...16} keeps the padding */
    }
    if (b < a || b - a > 1024)
        return -1;
    for (long v = a; v <= b; v++) {
        char item[32];
        if (alpha)
            snprintf(item, sizeof(item), "%c", (int)v);
        else
            snprintf(item, sizeof(item), "%0*ld", width, v);
        size_t plen = (size_t)(lb - arg), ilen = strlen(item), slen = strlen(rb + 1);
        char *next = malloc(plen + ilen + slen + 1);
        if (!next)
            return -1;
        memcpy(next, arg, plen);
        memcpy(next + plen, item, ilen);
        memcpy(next + plen + ilen, rb + 1, slen + 1);
        int rc = strata_drive_args_expand(next, out, n, max);
        free(next);
        if (rc != 0)
            return -1;
    }
    return 0;
}

unsigned strata_drive_set_size_pick(unsigned n)
{
    for (unsigned s = 16; s >= 4; s--)
        if (n % s == 0)
            return s;
    return 0;
}
