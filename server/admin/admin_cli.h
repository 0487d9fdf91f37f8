/*
 * admin_cli.h - "strata admin": the command line over the admin API.
 *
 *   strata admin [--endpoint URL] [--access-key K] [--secret-key S]
 *                [--region R] [--ca-cert PEM] [--json] COMMAND
 *   COMMAND: info | usage [BUCKET] | heal start [--wait] | heal status
 *            | audit verify | audit tail [N] | ilm run | ilm status | config
 *
 * Endpoint and keys come from the flags, else STRATA_ENDPOINT,
 * STRATA_ACCESS_KEY, STRATA_SECRET_KEY (and STRATA_CA_CERT for https).  Requests are SigV4 presigned
 * (strata_presign_v4, the server's own signer) and sent with libcurl.
 * Output: tables for people, the server's JSON with --json.
 * Exit codes: 0 done; 1 the server answered an error (its code and message
 * on stderr); 2 bad usage; 3 the server could not be reached or answered
 * something that is not the admin API; 4 audit verify found a broken or
 * inconsistent audit log.
 */
#ifndef STRATA_SERVER_ADMIN_ADMIN_CLI_H
#define STRATA_SERVER_ADMIN_ADMIN_CLI_H

#define STRATA_ADMIN_CLI_OK 0
#define STRATA_ADMIN_CLI_API_ERROR 1
#define STRATA_ADMIN_CLI_USAGE 2
#define STRATA_ADMIN_CLI_UNREACHABLE 3
#define STRATA_ADMIN_CLI_CHECK_FAILED 4

/* argv[0] is "admin".  Returns the exit code. */
int strata_admin_cli(int argc, char **argv);

#endif /* STRATA_SERVER_ADMIN_ADMIN_CLI_H */
