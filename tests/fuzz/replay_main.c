/*
 * replay_main.c - a plain main() for the fuzz targets, so CTest (gcc, no
 * libFuzzer) feeds every checked-in corpus file to LLVMFuzzerTestOneInput
 * on each run, under ASan+UBSan in the sanitizer build.
 *
 * Usage: fuzz_replay_<name> PATH...   (each PATH a corpus file or directory)
 * Exit status: 0 when every input ran clean; 1 when a path cannot be
 * read, no input at all was found (an empty corpus tests nothing, which
 * is a defect) or, under ASan, an input leaked memory (the first leaking
 * input is named, and the others still run); a crashing input ends the process
 * through the crash or the sanitizer right after its name was printed,
 * so the log names the culprit.
 * Single-threaded.
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Under ASan, check for leaks after every input, so a leak is pinned on
 * the input that caused it (at exit, LeakSanitizer could only say that
 * some input leaked). */
#if defined(__SANITIZE_ADDRESS__)
#define REPLAY_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLAY_LSAN 1
#endif
#endif
#ifdef REPLAY_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/* Reads a whole file into a malloc'ed buffer (caller frees); 0 or -1. */
static int slurp(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        uint8_t *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}

/* Runs one file; the exact-size copy lets ASan catch a read one past the
 * input, as libFuzzer's own buffer does. */
/* Set by the first input that leaks: the run fails at the end.  Leaked
 * blocks stay leaked, so every later check would report them again; only
 * the first leaking input can be named (fix it and rerun for the next),
 * while the remaining inputs still run for crashes. */
static const char *g_leaky;

static int run_file(const char *path, unsigned long *ran)
{
    uint8_t *buf;
    size_t len;
    if (slurp(path, &buf, &len) != 0) {
        fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, len);
    free(buf);
    /* Named before it runs: a crash report follows this line. */
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    (*ran)++;
#ifdef REPLAY_LSAN
    if (!g_leaky && __lsan_do_recoverable_leak_check()) {
        fprintf(stderr, "replay: %s leaks memory (report above)\n", path);
        g_leaky = strdup(path);
    }
#endif
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order (so runs are repeatable). */
static int run_dir(const char *dir, unsigned long *ran)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue; /* ".", "..", and hidden files such as .gitkeep */
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof(*names));
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        size_t l = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(l);
        if (!names[n]) {
            rc = -1;
            break;
        }
        snprintf(names[n], l, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), cmp_names);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            rc = run_file(names[i], ran);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    unsigned long ran = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        int rc = S_ISDIR(st.st_mode) ? run_dir(argv[i], &ran) : run_file(argv[i], &ran);
        if (rc != 0)
            return 1;
    }
    if (ran == 0) {
        fprintf(stderr, "replay: no inputs found: an empty corpus tests nothing\n");
        return 1;
    }
    if (g_leaky) {
        fprintf(stderr, "replay: %lu inputs ran; %s (at least) leaks\n", ran, g_leaky);
        return 1;
    }
    printf("replay: %lu inputs ran without a finding\n", ran);
    return 0;
}
