/*
 * put_floor.c - benchmark (a program, not a test): the CPU floor of a
 * signed PUT on this machine, the work no S3 server can skip.  A signed
 * PUT must take its body off a TCP connection and compute its MD5 (the
 * ETag) and SHA-256 (x-amz-content-sha256); this program does exactly that
 * and nothing else, with the OpenSSL EVP calls Strata uses, and reports the
 * CPU it took (getrusage: user + system of this single-threaded receiver).
 *
 * A forked child connects over loopback and sends the bodies back to back
 * with send()s of 1 MiB (its CPU is its own, not counted).  The receiver
 * recv()s into one reused buffer of -r KiB and hashes each piece in 64 KiB
 * slices (MD5, then SHA-256, while the slice is in cache).  Each round
 * times four cells, one body each: recv only, recv + MD5 + SHA-256 (the
 * floor), and MD5 and SHA-256 alone over a buffer in memory.  Medians over
 * the rounds are printed with the load average before and after.
 *
 * Usage: bench_put_floor [-s body MiB, 64] [-n rounds, 7] [-r recv KiB, 1024]
 *
 * -r 16 gives what Strata's receives are (libmicrohttpd hands the body over
 * in pieces of about 16 KiB, its 32 KiB connection pool).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLICE (64u << 10)
#define SEND_PIECE (1u << 20)
#define ROUNDS_MAX 64

enum { CELL_RECV, CELL_FLOOR, CELL_MD5, CELL_SHA, NCELLS };
static const char *const cell_name[NCELLS] = {
    "recv only", "recv + MD5 + SHA-256 (floor)", "MD5 alone (memory)", "SHA-256 alone (memory)"};

static double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void loadavg(const char *when)
{
    char buf[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof(buf), f))
            buf[0] = '\0';
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = '\0';
    printf("load average %s: %s\n", when, buf);
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* The sender: nbodies bodies of size bytes, back to back. */
static void send_bodies(int port, size_t size, unsigned nbodies)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
        die("connect");
    uint8_t *piece = malloc(SEND_PIECE);
    if (!piece)
        die("malloc");
    for (size_t i = 0; i < SEND_PIECE; i++)
        piece[i] = (uint8_t)(i * 2654435761u >> 24);
    for (unsigned b = 0; b < nbodies; b++) {
        for (size_t off = 0; off < size;) {
            size_t n = size - off < SEND_PIECE ? size - off : SEND_PIECE;
            ssize_t w = send(fd, piece, n, 0);
            if (w <= 0)
                die("send");
            off += (size_t)w;
        }
    }
    close(fd);
    free(piece);
}

struct hashes {
    EVP_MD_CTX *md5, *sha;
};

static void hash_init(struct hashes *h)
{
    if (EVP_DigestInit_ex(h->md5, EVP_md5(), NULL) != 1 ||
        EVP_DigestInit_ex(h->sha, EVP_sha256(), NULL) != 1)
        die("EVP_DigestInit_ex");
}

static void hash_final(struct hashes *h)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    if (EVP_DigestFinal_ex(h->md5, md, &n) != 1 || EVP_DigestFinal_ex(h->sha, md, &n) != 1)
        die("EVP_DigestFinal_ex");
}

/* One body off the connection; with h, hashed as it comes.  Returns the
 * number of recv() calls. */
static unsigned long recv_body(int fd, uint8_t *buf, size_t cap, size_t size, struct hashes *h)
{
    unsigned long calls = 0;
    for (size_t got = 0; got < size;) {
        size_t want = size - got < cap ? size - got : cap;
        ssize_t n = recv(fd, buf, want, 0);
        if (n <= 0)
            die("recv");
        calls++;
        got += (size_t)n;
        for (size_t off = 0; h && off < (size_t)n; off += SLICE) {
            size_t s = (size_t)n - off < SLICE ? (size_t)n - off : SLICE;
            EVP_DigestUpdate(h->md5, buf + off, s);
            EVP_DigestUpdate(h->sha, buf + off, s);
        }
    }
    return calls;
}

/* size bytes of the buffer hashed in slices, over and over: span is the
 * buffer's length in whole slices. */
static void hash_memory(EVP_MD_CTX *c, const EVP_MD *md, const uint8_t *buf, size_t span,
                        size_t size)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_DigestInit_ex(c, md, NULL);
    for (size_t done = 0; done < size; done += SLICE)
        EVP_DigestUpdate(c, buf + done % span, size - done < SLICE ? size - done : SLICE);
    EVP_DigestFinal_ex(c, out, &n);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    size_t size = 64u << 20, cap = 1u << 20;
    unsigned rounds = 7;
    int opt;
    while ((opt = getopt(argc, argv, "s:n:r:")) != -1) {
        if (opt == 's')
            size = strtoull(optarg, NULL, 10) << 20;
        else if (opt == 'n')
            rounds = (unsigned)strtoul(optarg, NULL, 10);
        else if (opt == 'r')
            cap = strtoull(optarg, NULL, 10) << 10;
        else {
            fprintf(stderr, "usage: %s [-s MiB] [-n rounds] [-r recv KiB]\n", argv[0]);
            return 2;
        }
    }
    if (!size || !rounds || rounds > ROUNDS_MAX || cap < 4096) {
        fprintf(stderr, "put_floor: body > 0, 1..%d rounds, recv size >= 4 KiB\n", ROUNDS_MAX);
        return 2;
    }

    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof(sin);
    if (ls < 0 || bind(ls, (struct sockaddr *)&sin, sizeof(sin)) != 0 || listen(ls, 1) != 0 ||
        getsockname(ls, (struct sockaddr *)&sin, &sl) != 0)
        die("listen");
    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) {
        close(ls);
        send_bodies(ntohs(sin.sin_port), size, 2 * rounds);
        _exit(0);
    }
    int fd = accept(ls, NULL, NULL);
    if (fd < 0)
        die("accept");
    close(ls);

    size_t span = cap > SLICE ? cap / SLICE * SLICE : SLICE; /* for the memory cells */
    uint8_t *buf = aligned_alloc(4096, cap > span ? cap : span);
    struct hashes h = {EVP_MD_CTX_new(), EVP_MD_CTX_new()};
    if (!buf || !h.md5 || !h.sha)
        die("alloc");
    memset(buf, 0x5a, cap > span ? cap : span);
    double cpu[NCELLS][ROUNDS_MAX], wall[NCELLS][ROUNDS_MAX];
    unsigned long calls = 0;
    printf("body %zu MiB, %u rounds, recv() of up to %zu KiB, hashing in %u KiB slices\n",
           size >> 20, rounds, cap >> 10, SLICE >> 10);
    loadavg("before");
    for (unsigned r = 0; r < rounds; r++) {
        for (int c = 0; c < NCELLS; c++) {
            double c0 = cpu_ms(), w0 = wall_ms();
            switch (c) {
            case CELL_RECV:
                recv_body(fd, buf, cap, size, NULL);
                break;
            case CELL_FLOOR:
                hash_init(&h);
                calls += recv_body(fd, buf, cap, size, &h);
                hash_final(&h);
                break;
            case CELL_MD5:
                hash_memory(h.md5, EVP_md5(), buf, span, size);
                break;
            case CELL_SHA:
                hash_memory(h.sha, EVP_sha256(), buf, span, size);
                break;
            }
            cpu[c][r] = cpu_ms() - c0;
            wall[c][r] = wall_ms() - w0;
        }
    }
    loadavg("after");
    printf("recv() calls per body (floor cell): %lu, %.0f KiB each on average\n", calls / rounds,
           (double)size * rounds / (double)calls / 1024);
    printf("%-30s %14s %10s\n", "cell (median of rounds)", "CPU ms/body", "MB/s");
    for (int c = 0; c < NCELLS; c++) {
        double cm = median(cpu[c], rounds), wm = median(wall[c], rounds);
        printf("%-30s %14.1f %10.0f\n", cell_name[c], cm, (double)size / 1e6 / (wm / 1e3));
    }
    close(fd);
    int st = 0;
    waitpid(child, &st, 0);
    EVP_MD_CTX_free(h.md5);
    EVP_MD_CTX_free(h.sha);
    free(buf);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
