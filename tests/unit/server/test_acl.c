/*
 * test_acl.c - the ACL model (server/auth/acl.c) and the AccessControlPolicy
 * parser (server/s3/s3_xml.c): canned ACLs as AWS defines them, grant
 * headers, evaluation for owner / other user / anonymous, the stored form
 * and the XML round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <libxml/parser.h>

#include "srv.h"

/* Users "owner", "bob" (bob@example.com) and "carol". */
static bool users(void *ud, bool by_email, const char *value, char *id_out)
{
    (void)ud;
    const char *id = NULL;
    if (by_email)
        id = strcmp(value, "bob@example.com") == 0 ? "bob" : NULL;
    else if (strcmp(value, "owner") == 0 || strcmp(value, "bob") == 0 ||
             strcmp(value, "carol") == 0)
        id = value;
    if (!id)
        return false;
    snprintf(id_out, STRATA_ACL_ID_MAX, "%s", id);
    return true;
}

static struct strata_acl acl, back;

/* Each canned ACL, and who it lets read / write (nobody but the owner may
 * otherwise): NULL caller is anonymous. */
static void test_canned(void **state)
{
    (void)state;
    assert_int_equal(
        strata_s3_err_from_auth(strata_acl_canned(&acl, "private", false, "owner", "owner")),
        S3E_NONE);
    assert_int_equal(acl.n, 1);
    assert_true(strata_acl_allows(&acl, "owner", STRATA_ACL_READ, false));
    assert_false(strata_acl_allows(&acl, "bob", STRATA_ACL_READ, false));
    assert_false(strata_acl_allows(&acl, NULL, STRATA_ACL_READ, false));
    assert_true(strata_acl_is_owner_only(&acl, "owner"));
    assert_false(strata_acl_is_public(&acl));

    assert_int_equal(
        strata_s3_err_from_auth(strata_acl_canned(&acl, "public-read", false, "owner", "owner")),
        S3E_NONE);
    assert_true(strata_acl_allows(&acl, NULL, STRATA_ACL_READ, false));
    assert_true(strata_acl_allows(&acl, "bob", STRATA_ACL_READ, false));
    assert_false(strata_acl_allows(&acl, NULL, STRATA_ACL_WRITE, false));
    assert_false(strata_acl_allows(&acl, NULL, STRATA_ACL_READ, true)); /* IgnorePublicAcls */
    assert_true(strata_acl_is_public(&acl));
    assert_false(strata_acl_is_owner_only(&acl, "owner"));

    assert_int_equal(strata_s3_err_from_auth(
                         strata_acl_canned(&acl, "public-read-write", true, "owner", "owner")),
                     S3E_NONE);
    assert_true(strata_acl_allows(&acl, NULL, STRATA_ACL_WRITE, false));
    assert_false(strata_acl_allows(&acl, NULL, STRATA_ACL_READ_ACP, false));

    assert_int_equal(strata_s3_err_from_auth(
                         strata_acl_canned(&acl, "authenticated-read", false, "owner", "owner")),
                     S3E_NONE);
    assert_false(strata_acl_allows(&acl, NULL, STRATA_ACL_READ, false));
    assert_true(strata_acl_allows(&acl, "carol", STRATA_ACL_READ, false));
    assert_true(strata_acl_is_public(&acl));

    /* Written by bob into owner's bucket. */
    assert_int_equal(strata_s3_err_from_auth(
                         strata_acl_canned(&acl, "bucket-owner-read", false, "bob", "owner")),
                     S3E_NONE);
    assert_true(strata_acl_allows(&acl, "owner", STRATA_ACL_READ, false));
    assert_false(strata_acl_allows(&acl, "owner", STRATA_ACL_WRITE_ACP, false));
    assert_true(strata_acl_allows(&acl, "bob", STRATA_ACL_WRITE_ACP, false));
    assert_int_equal(strata_s3_err_from_auth(strata_acl_canned(&acl, "bucket-owner-full-control",
                                                               false, "bob", "owner")),
                     S3E_NONE);
    assert_int_equal(acl.n, 2);
    assert_true(strata_acl_allows(&acl, "owner", STRATA_ACL_WRITE_ACP, false));
    assert_false(strata_acl_allows(&acl, "carol", STRATA_ACL_READ, false));
    /* What BucketOwnerEnforced accepts from bob: bucket-owner-full-control,
     * not private (bob alone), not bucket-owner-read. */
    assert_true(strata_acl_is_owner_full_control(&acl, "owner"));
    assert_int_equal(
        strata_s3_err_from_auth(strata_acl_canned(&acl, "private", false, "bob", "owner")),
        S3E_NONE);
    assert_false(strata_acl_is_owner_full_control(&acl, "owner"));
    assert_int_equal(strata_s3_err_from_auth(
                         strata_acl_canned(&acl, "bucket-owner-read", false, "bob", "owner")),
                     S3E_NONE);
    assert_false(strata_acl_is_owner_full_control(&acl, "owner"));
    assert_int_equal(
        strata_s3_err_from_auth(strata_acl_canned(&acl, "private", false, "owner", "owner")),
        S3E_NONE);
    assert_true(strata_acl_is_owner_full_control(&acl, "owner"));
    assert_true(strata_acl_is_default(&acl, "owner"));
    /* No grants at all: private, but neither the default nor full control. */
    acl.n = 0;
    assert_true(strata_acl_is_owner_only(&acl, "owner"));
    assert_false(strata_acl_is_default(&acl, "owner"));
    assert_false(strata_acl_is_owner_full_control(&acl, "owner"));
    /* On a bucket both are the owner's own: private. */
    assert_int_equal(strata_s3_err_from_auth(strata_acl_canned(&acl, "bucket-owner-full-control",
                                                               true, "owner", "owner")),
                     S3E_NONE);
    assert_true(strata_acl_is_owner_only(&acl, "owner"));

    assert_int_equal(strata_s3_err_from_auth(
                         strata_acl_canned(&acl, "log-delivery-write", true, "owner", "owner")),
                     S3E_NONE);
    assert_int_equal(acl.n, 3);
    assert_false(strata_acl_is_public(&acl));
    assert_int_equal(strata_s3_err_from_auth(
                         strata_acl_canned(&acl, "log-delivery-write", false, "owner", "owner")),
                     S3E_InvalidArgument);
    assert_int_equal(
        strata_s3_err_from_auth(strata_acl_canned(&acl, "aws-exec-read", false, "owner", "owner")),
        S3E_NotImplemented);
    assert_int_equal(
        strata_s3_err_from_auth(strata_acl_canned(&acl, "Public-Read", false, "owner", "owner")),
        S3E_InvalidArgument);
}

static void test_grant_headers(void **state)
{
    (void)state;
    acl.n = 0;
    snprintf(acl.owner, sizeof(acl.owner), "owner");
    assert_int_equal(strata_s3_err_from_auth(
                         strata_acl_grant_hdr(&acl, STRATA_ACL_READ,
                                              "id=\"bob\", uri=\"http://acs.amazonaws.com/groups/"
                                              "global/AllUsers\"",
                                              users, NULL)),
                     S3E_NONE);
    assert_int_equal(strata_s3_err_from_auth(strata_acl_grant_hdr(
                         &acl, STRATA_ACL_WRITE, "emailAddress=\"bob@example.com\"", users, NULL)),
                     S3E_NONE);
    assert_int_equal(strata_s3_err_from_auth(strata_acl_grant_hdr(&acl, STRATA_ACL_FULL_CONTROL,
                                                                  "id=carol", users, NULL)),
                     S3E_NONE);
    assert_int_equal(acl.n, 4);
    assert_true(strata_acl_allows(&acl, "bob", STRATA_ACL_WRITE, false));
    assert_false(strata_acl_allows(&acl, "bob", STRATA_ACL_READ_ACP, false));
    assert_true(strata_acl_allows(&acl, "carol", STRATA_ACL_WRITE_ACP, false)); /* FULL_CONTROL */
    assert_true(strata_acl_allows(&acl, NULL, STRATA_ACL_READ, false));
    /* The owner keeps READ_ACP / WRITE_ACP without a grant, not WRITE. */
    assert_true(strata_acl_allows(&acl, "owner", STRATA_ACL_WRITE_ACP, false));
    assert_false(strata_acl_allows(&acl, "owner", STRATA_ACL_WRITE, false));

    assert_int_equal(strata_s3_err_from_auth(strata_acl_grant_hdr(
                         &acl, STRATA_ACL_READ, "emailAddress=nobody@x.org", users, NULL)),
                     S3E_UnresolvableGrantByEmailAddress);
    assert_int_equal(strata_s3_err_from_auth(
                         strata_acl_grant_hdr(&acl, STRATA_ACL_READ, "id=mallory", users, NULL)),
                     S3E_InvalidArgument);
    assert_int_equal(strata_s3_err_from_auth(strata_acl_grant_hdr(
                         &acl, STRATA_ACL_READ, "uri=http://acs.amazonaws.com/groups/global/Nobody",
                         users, NULL)),
                     S3E_InvalidArgument);
    assert_int_equal(
        strata_s3_err_from_auth(strata_acl_grant_hdr(&acl, STRATA_ACL_READ, "bob", users, NULL)),
        S3E_InvalidArgument);
    assert_int_equal(strata_s3_err_from_auth(
                         strata_acl_grant_hdr(&acl, STRATA_ACL_READ, "arn=bob", users, NULL)),
                     S3E_InvalidArgument);
    assert_int_equal(strata_s3_err_from_auth(
                         strata_acl_grant_hdr(&acl, STRATA_ACL_READ, "id=bob,", users, NULL)),
                     S3E_InvalidArgument);
}

static void test_stored_form(void **state)
{
    (void)state;
    struct strata_sbuf b;
    strata_sbuf_init(&b, STRATA_ACL_MAX);
    assert_int_equal(strata_acl_encode(&acl, &b), 0);
    assert_int_equal(strata_acl_decode(b.data, b.len, &back), 0);
    assert_string_equal(back.owner, acl.owner);
    assert_int_equal(back.n, acl.n);
    assert_memory_equal(back.g, acl.g, acl.n * sizeof(acl.g[0]));
    assert_int_equal(strata_acl_decode(b.data, b.len - 1, &back), -1);
    assert_int_equal(strata_acl_decode("\x91\x02", 2, &back), -1); /* another format */
    strata_sbuf_fini(&b);
    /* At most STRATA_ACL_GRANTS_MAX grants; duplicates count once. */
    strata_acl_default(&acl, "owner");
    assert_int_equal(strata_s3_err_from_auth(
                         strata_acl_add(&acl, STRATA_ACL_USER, STRATA_ACL_FULL_CONTROL, "owner")),
                     S3E_NONE);
    assert_int_equal(acl.n, 1);
    char id[16];
    for (int i = 1; i < STRATA_ACL_GRANTS_MAX; i++) {
        snprintf(id, sizeof(id), "u%d", i);
        assert_int_equal(
            strata_s3_err_from_auth(strata_acl_add(&acl, STRATA_ACL_USER, STRATA_ACL_READ, id)),
            S3E_NONE);
    }
    assert_int_equal(
        strata_s3_err_from_auth(strata_acl_add(&acl, STRATA_ACL_USER, STRATA_ACL_READ, "one-more")),
        S3E_InvalidArgument);
}

static const char *names(void *ud, const char *id)
{
    (void)ud;
    return strcmp(id, "bob") == 0 ? "Bob B" : NULL;
}

/* GetAcl's document parses back into the same ACL (owner and grants). */
static void test_xml_round_trip(void **state)
{
    (void)state;
    acl.n = 0;
    snprintf(acl.owner, sizeof(acl.owner), "owner");
    strata_acl_add(&acl, STRATA_ACL_USER, STRATA_ACL_FULL_CONTROL, "owner");
    strata_acl_add(&acl, STRATA_ACL_USER, STRATA_ACL_READ_ACP, "bob");
    strata_acl_add(&acl, STRATA_ACL_AUTH_USERS, STRATA_ACL_READ, NULL);
    strata_acl_add(&acl, STRATA_ACL_LOG_DELIVERY, STRATA_ACL_WRITE, NULL);
    struct strata_sbuf b;
    strata_sbuf_init(&b, 65536);
    strata_acl_xml(&acl, names, NULL, &b);
    strata_sbuf_append(&b, "", 1);
    assert_non_null(strstr(b.data, "<DisplayName>Bob B</DisplayName>"));
    assert_non_null(strstr(b.data, "xsi:type=\"Group\"><URI>http://acs.amazonaws.com/groups/"
                                   "global/AuthenticatedUsers</URI>"));
    assert_int_equal(strata_xml_acl_parse(b.data, b.len - 1, &back, users, NULL), S3E_NONE);
    assert_string_equal(back.owner, "owner");
    assert_int_equal(back.n, acl.n);
    /* Group grants come first in the answer, users after, each in order. */
    const struct strata_acl_grant want[] = {acl.g[2], acl.g[3], acl.g[0], acl.g[1]};
    assert_memory_equal(back.g, want, sizeof(want));
    strata_sbuf_fini(&b);
}

static void test_xml_errors(void **state)
{
    (void)state;
#define ACP(grants)                                                                               \
    "<AccessControlPolicy xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner><ID>owner"     \
    "</ID></Owner><AccessControlList>" grants "</AccessControlList></AccessControlPolicy>"
#define XSI "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
    static const struct {
        const char *doc;
        enum s3_err want;
    } cases[] = {
        {ACP(""), S3E_NONE},
        {ACP("<Grant><Grantee " XSI "xsi:type=\"AmazonCustomerByEmail\"><EmailAddress>"
             "bob@example.com</EmailAddress></Grantee><Permission>READ</Permission></Grant>"),
         S3E_NONE},
        {ACP("<Grant><Grantee " XSI "xsi:type=\"AmazonCustomerByEmail\"><EmailAddress>"
             "eve@example.com</EmailAddress></Grantee><Permission>READ</Permission></Grant>"),
         S3E_UnresolvableGrantByEmailAddress},
        {ACP("<Grant><Grantee " XSI "xsi:type=\"CanonicalUser\"><ID>mallory</ID></Grantee>"
             "<Permission>READ</Permission></Grant>"),
         S3E_InvalidArgument},
        {ACP("<Grant><Grantee " XSI "xsi:type=\"CanonicalUser\"><ID>bob</ID></Grantee>"
             "<Permission>EVERYTHING</Permission></Grant>"),
         S3E_MalformedACLError},
        {ACP("<Grant><Permission>READ</Permission></Grant>"), S3E_MalformedACLError},
        {ACP("<Grant><Grantee " XSI "xsi:type=\"Group\"><URI>http://example.com/g</URI>"
             "</Grantee><Permission>READ</Permission></Grant>"),
         S3E_InvalidArgument},
        {"<AccessControlPolicy><AccessControlList/></AccessControlPolicy>", S3E_MalformedACLError},
        {"<AccessControlPolicy><Owner><ID>owner</ID></Owner>", S3E_MalformedACLError},
        {"<Policy/>", S3E_MalformedACLError},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(strata_xml_acl_parse(cases[i].doc, strlen(cases[i].doc), &back, users,
                                              NULL),
                         cases[i].want);
}

int main(void)
{
    xmlInitParser();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canned),          cmocka_unit_test(test_grant_headers),
        cmocka_unit_test(test_stored_form),     cmocka_unit_test(test_xml_round_trip),
        cmocka_unit_test(test_xml_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
