/*
 * fuzz_notify_spec.c - libFuzzer target for the --notify-target check
 * (strata_notify_spec_check, server/notify/notify_queue.c: ID:KIND, then
 * the kind's ADDRESS, which opens the target without connecting) and the
 * broker ADDRESS parser under it (strata_notify_addr_parse).
 *
 * Input: a spec (cut at the first NUL).  Checks:
 *   - a refusal always says why (err not empty), an acceptance leaves err
 *     alone;
 *   - an address the parser accepts has a port of 1..65535, a non-empty
 *     host and path without space or control bytes, a user of
 *     [A-Za-z0-9._-] (or none), and every field NUL-terminated in its
 *     array;
 *   - an amqp/mqtt/postgres spec accepted by the check has an address the
 *     parser accepts;
 *   - everything opened is closed (LeakSanitizer).
 */
#include "fuzz.h"

#include <stdbool.h>

#include "notify/notify.h"
#include "notify/notify_addr.h"

static bool clean(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 0x7f)
            return false;
    return true;
}

static void check_addr(const char *addr, const char *scheme, bool must)
{
    struct strata_notify_addr a;
    if (strata_notify_addr_parse(addr, scheme, &a) != 0) {
        if (must)
            STRATA_FUZZ_FAIL();
        return;
    }
    if (a.port < 1 || a.port > 65535 || !a.host[0] || !a.path[0])
        STRATA_FUZZ_FAIL();
    if (!memchr(a.user, 0, sizeof(a.user)) || !memchr(a.host, 0, sizeof(a.host)) ||
        !memchr(a.path, 0, sizeof(a.path)))
        STRATA_FUZZ_FAIL();
    if (!clean(a.host) || !clean(a.path))
        STRATA_FUZZ_FAIL();
    for (const char *u = a.user; *u; u++)
        if (!((*u >= 'a' && *u <= 'z') || (*u >= 'A' && *u <= 'Z') || (*u >= '0' && *u <= '9') ||
              *u == '.' || *u == '_' || *u == '-'))
            STRATA_FUZZ_FAIL();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *spec = strata_fuzz_strdup(data, size);
    char err[512] = "";
    int rc = strata_notify_spec_check(spec, err, sizeof(err));
    if ((rc == 0) != (err[0] == '\0'))
        STRATA_FUZZ_FAIL();
    static const char *const kinds[] = {"amqp", "mqtt", "postgres"};
    const char *c1 = strchr(spec, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    for (size_t i = 0; c2 && i < 3; i++) {
        size_t kl = strlen(kinds[i]);
        bool kind = (size_t)(c2 - c1 - 1) == kl && strncmp(c1 + 1, kinds[i], kl) == 0;
        if (kind)
            check_addr(c2 + 1, kinds[i], rc == 0);
    }
    /* The parser on its own, with every scheme. */
    for (size_t i = 0; i < 3; i++)
        check_addr(spec, kinds[i], false);
    free(spec);
    return 0;
}
