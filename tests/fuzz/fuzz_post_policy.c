/*
 * fuzz_post_policy.c - libFuzzer target for POST Object policies
 * (server/auth/post_policy.c): the JSON document a browser form carries
 * (base64-encoded here, as in the form's policy field) is parsed and
 * validated, and every policy that passes is checked against fixed forms.
 *
 * Input: the policy's JSON text.  Checks: the result is one of the
 * documented codes, a refusal carries a message and no policy; a check
 * answers STRATA_AUTH_OK or EXPIRED / POLICY_VIOLATION with a message, the same when asked
 * twice; a content-length range has min <= max.
 */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "post_policy.h"
#include "base64.h"

static const struct strata_auth_hdr form_a[] = {
    {"key", "user/eric/${filename}"}, {"Content-Type", "image/png, image/gif"},
    {"x-amz-meta-tag", ""},           {"success_action_status", "201"},
    {"policy", "x"},                  {"x-ignore-a", "1"},
};
static const struct strata_auth_hdr form_b[] = {
    {"KEY", "a"}, {"acl", "private"}, {"bucket", "fuzz-bucket"}, {"x-amz-date", "20260101T000000Z"},
};

static void check(const struct strata_post_policy *p, const struct strata_auth_hdr *f, size_t n,
                  time_t now)
{
    char msg[512], msg2[512];
    msg[0] = msg2[0] = '\0';
    enum strata_auth_err e =
        strata_post_policy_check(p, "fuzz-bucket", f, n, now, msg, sizeof(msg));
    if (e != STRATA_AUTH_OK &&
        ((e != STRATA_AUTH_EXPIRED && e != STRATA_AUTH_POLICY_VIOLATION) || msg[0] == '\0'))
        STRATA_FUZZ_FAIL();
    if (strata_post_policy_check(p, "fuzz-bucket", f, n, now, msg2, sizeof(msg2)) != e)
        STRATA_FUZZ_FAIL();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t cap = 4 * (size / 3 + 1) + 1;
    char *b64 = malloc(cap);
    if (!b64)
        STRATA_FUZZ_FAIL();
    if (strata_b64_encode(data, size, b64, cap) < 0)
        STRATA_FUZZ_FAIL();
    char msg[512];
    msg[0] = '\0';
    struct strata_post_policy *p = (struct strata_post_policy *)1;
    enum strata_auth_err e = strata_post_policy_parse(b64, &p, msg, sizeof(msg));
    free(b64);
    if (e != STRATA_AUTH_OK) {
        if ((e != STRATA_AUTH_BAD_POLICY && e != STRATA_AUTH_INTERNAL) || p || !msg[0])
            STRATA_FUZZ_FAIL();
        return 0;
    }
    if (!p)
        STRATA_FUZZ_FAIL();
    uint64_t lo, hi;
    if (strata_post_policy_length_range(p, &lo, &hi) && lo > hi)
        STRATA_FUZZ_FAIL();
    check(p, form_a, sizeof(form_a) / sizeof(form_a[0]), 1700000000);
    check(p, form_b, sizeof(form_b) / sizeof(form_b[0]), 1700000000);
    check(p, form_b, 0, 4000000000);
    strata_post_policy_free(p);
    return 0;
}
