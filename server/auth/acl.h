/*
 * acl.h - S3 access control lists: the model, canned ACLs, the
 * x-amz-grant-* header syntax, the stored encoding, the XML answer and
 * the evaluation of a grant for a caller.  Pure (no I/O; users are
 * resolved through a callback), so any thread; unit-tested in
 * tests/unit/server/test_acl.c.
 *
 * Identities: a user's canonical ID is its access key (what Strata puts
 * in every Owner/ID); anonymous callers have none.  Groups are AWS's
 * AllUsers, AuthenticatedUsers and LogDelivery URIs.  Grants by e-mail
 * are resolved to the user's canonical ID when they are set, as AWS does,
 * so a stored ACL only ever holds canonical users and groups.
 */
#ifndef STRATA_SERVER_AUTH_ACL_H
#define STRATA_SERVER_AUTH_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "sbuf.h"

/* Permissions, as bits so a request can ask for one and a grant hold one. */
enum strata_acl_perm {
    STRATA_ACL_READ = 1,
    STRATA_ACL_WRITE = 2,
    STRATA_ACL_READ_ACP = 4,
    STRATA_ACL_WRITE_ACP = 8,
    STRATA_ACL_FULL_CONTROL = 16, /* implies the four others */
};

enum strata_acl_grantee {
    STRATA_ACL_USER = 0,       /* canonical user: id is the access key */
    STRATA_ACL_ALL_USERS,      /* http://acs.amazonaws.com/groups/global/AllUsers */
    STRATA_ACL_AUTH_USERS,     /* .../global/AuthenticatedUsers */
    STRATA_ACL_LOG_DELIVERY,   /* .../s3/LogDelivery */
};

#define STRATA_ACL_GRANTS_MAX 100 /* AWS's limit per ACL */
#define STRATA_ACL_ID_MAX 128

struct strata_acl_grant {
    uint8_t type; /* enum strata_acl_grantee */
    uint8_t perm; /* one enum strata_acl_perm */
    char id[STRATA_ACL_ID_MAX]; /* STRATA_ACL_USER only */
};

struct strata_acl {
    char owner[STRATA_ACL_ID_MAX];
    size_t n;
    struct strata_acl_grant g[STRATA_ACL_GRANTS_MAX];
};

/* Resolves a grantee named by the client into a canonical ID (copied into
 * id_out, STRATA_ACL_ID_MAX bytes).  by_email: value is an e-mail address,
 * else a canonical ID to check.  Returns false when no user matches. */
typedef bool (*strata_acl_resolve_cb)(void *ud, bool by_email, const char *value,
                                      char *id_out);

/* owner with FULL_CONTROL: what a resource without a stored ACL has. */
void strata_acl_default(struct strata_acl *a, const char *owner);

/*
 * The canned ACL name for a resource owned by owner in a bucket owned by
 * bucket_owner (for a bucket both are its owner).  STRATA_AUTH_OK, or
 * BAD_ARGUMENT for an unknown name (or log-delivery-write on an object),
 * UNSUPPORTED for aws-exec-read (there is no EC2 to grant to).
 */
enum strata_auth_err strata_acl_canned(struct strata_acl *a, const char *name, bool bucket,
                                       const char *owner, const char *bucket_owner);

/* Adds the grants of one x-amz-grant-<perm> header value ("id=...,
 * uri=\"...\", emailAddress=..."; quotes optional).  BAD_ARGUMENT for bad
 * syntax, an unknown URI or ID, or over STRATA_ACL_GRANTS_MAX grants;
 * UNKNOWN_EMAIL for an unknown address. */
enum strata_auth_err strata_acl_grant_hdr(struct strata_acl *a, int perm, const char *value,
                                          strata_acl_resolve_cb resolve, void *ud);

/* Appends a grant; BAD_ARGUMENT when full.  Exact duplicates are kept
 * once. */
enum strata_auth_err strata_acl_add(struct strata_acl *a, int type, int perm, const char *id);

/* Permission name <-> bit; 0 for an unknown name. */
int strata_acl_perm_parse(const char *name);
const char *strata_acl_perm_name(int perm);
/* Group URI <-> grantee type; -1 for an unknown URI. */
int strata_acl_group_parse(const char *uri);
const char *strata_acl_group_uri(int type);

/* Whether the caller (access key, NULL for anonymous) holds perm.  The
 * owner always holds READ_ACP and WRITE_ACP, as on AWS.  ignore_public
 * skips grants to AllUsers and AuthenticatedUsers (IgnorePublicAcls). */
bool strata_acl_allows(const struct strata_acl *a, const char *caller, int perm,
                       bool ignore_public);
/* Any grant to AllUsers or AuthenticatedUsers (what public access block
 * calls a public ACL). */
bool strata_acl_is_public(const struct strata_acl *a);
/* Owned by id, and every grant (if any) FULL_CONTROL to user id: a
 * private ACL. */
bool strata_acl_is_owner_only(const struct strata_acl *a, const char *id);

/* Exactly the default: id is the owner and holds FULL_CONTROL, nothing
 * else (an ACL with no grants at all is not the default). */
bool strata_acl_is_default(const struct strata_acl *a, const char *id);
/* bucket-owner-full-control or its equivalent, what BucketOwnerEnforced
 * accepts from a writer: every grant is FULL_CONTROL to the ACL's owner
 * or to bucket_owner, and bucket_owner holds one. */
bool strata_acl_is_owner_full_control(const struct strata_acl *a, const char *bucket_owner);

/*
 * Stored form (a bucket's "acl" configuration document, a version
 * record's ACL field): msgpack array
 *   [1 (format), owner str, then per grant: type uint, perm uint, id str]
 * decode returns 0, or -1 for bytes that are not such an array.
 */
int strata_acl_encode(const struct strata_acl *a, struct strata_sbuf *out);
int strata_acl_decode(const void *buf, size_t len, struct strata_acl *a);
/* Only the owner of a stored ACL, into out (STRATA_ACL_ID_MAX bytes):
 * 0, or -1 as strata_acl_decode. */
int strata_acl_owner(const void *buf, size_t len, char *out);

/* The AccessControlPolicy document (GetBucketAcl/GetObjectAcl).  name_cb
 * gives a canonical ID's DisplayName (or NULL to leave it out). */
typedef const char *(*strata_acl_name_cb)(void *ud, const char *id);
void strata_acl_xml(const struct strata_acl *a, strata_acl_name_cb name_cb, void *ud,
                    struct strata_sbuf *b);

#endif /* STRATA_SERVER_AUTH_ACL_H */
