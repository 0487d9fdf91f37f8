/*
 * fuzz_policy.c - libFuzzer target for bucket policies: the JSON document
 * a client PUTs is parsed and validated by strata_policy_parse, and every
 * policy that passes is evaluated against a fixed set of request contexts
 * (anonymous and signed, IPv4 and IPv6 sources, dates, numbers, tags).
 *
 * Input: the policy document (bucket "fuzz-bucket").  Checks: the result
 * is one of the documented codes, a refusal always carries a message and
 * no policy, a document over STRATA_POLICY_MAX is always ETOOBIG; the
 * decision is one of the three values and the same when asked twice;
 * is_public and uses_key never crash.
 */
#include "fuzz.h"

#include "policy.h"
#include "strata/err.h"

static const struct strata_policy_kv kv_a[] = {
    {"aws:SourceIp", "127.0.0.1"},         {"aws:SecureTransport", "false"},
    {"aws:CurrentTime", "2026-11-24T01:00:00Z"}, {"aws:userid", "anonymous"},
    {"s3:prefix", "home/"},                {"s3:max-keys", "100"},
    {"s3:RequestObjectTagKeys", "a"},      {"s3:RequestObjectTagKeys", "b"},
};
static const struct strata_policy_kv kv_b[] = {
    {"aws:SourceIp", "2001:db8::1"},        {"aws:SecureTransport", "true"},
    {"aws:CurrentTime", "1999-01-01"},      {"aws:username", "alice"},
    {"s3:ExistingObjectTag/env", "prod"},   {"s3:x-amz-acl", "private"},
};

static const struct strata_policy_ctx ctxs[] = {
    {NULL, "s3:GetObject", "arn:aws:s3:::fuzz-bucket/a/b", kv_a, 8},
    {"AKIAFUZZ", "s3:ListBucket", "arn:aws:s3:::fuzz-bucket", kv_a, 8},
    {"AKIAFUZZ", "s3:PutObject", "arn:aws:s3:::fuzz-bucket/x", kv_b, 6},
    {"OTHER", "s3:DeleteObjectVersion", "arn:aws:s3:::fuzz-bucket/home/k", kv_b, 6},
    {NULL, "s3:PutBucketPolicy", "arn:aws:s3:::fuzz-bucket", NULL, 0},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char msg[256];
    struct strata_policy *p = (struct strata_policy *)1;
    int rc = strata_policy_parse((const char *)data, size, "fuzz-bucket", &p, msg, sizeof(msg));
    if (rc != 0 && rc != STRATA_EINVAL && rc != STRATA_ETOOBIG && rc != STRATA_ENOTIMPL &&
        rc != STRATA_ENOMEM)
        STRATA_FUZZ_FAIL();
    if (size > STRATA_POLICY_MAX && rc != STRATA_ETOOBIG)
        STRATA_FUZZ_FAIL();
    if (rc) {
        if (p != NULL || msg[0] == '\0')
            STRATA_FUZZ_FAIL();
        return 0;
    }
    if (!p)
        STRATA_FUZZ_FAIL();
    for (size_t i = 0; i < sizeof(ctxs) / sizeof(ctxs[0]); i++) {
        enum strata_policy_decision d = strata_policy_eval(p, &ctxs[i]);
        if (d != STRATA_POLICY_NOMATCH && d != STRATA_POLICY_ALLOW && d != STRATA_POLICY_DENY)
            STRATA_FUZZ_FAIL();
        if (strata_policy_eval(p, &ctxs[i]) != d)
            STRATA_FUZZ_FAIL();
    }
    (void)strata_policy_is_public(p);
    (void)strata_policy_uses_key(p, "s3:ExistingObjectTag/");
    strata_policy_destroy(p);
    return 0;
}
