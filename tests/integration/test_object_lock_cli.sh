#!/usr/bin/env bash
# test_object_lock_cli.sh - S3 Object Lock through the AWS CLI v2 (/usr/bin/aws):
# create-bucket --object-lock-enabled-for-bucket, put/get-object-lock-configuration
# (default retention, MalformedXML, InvalidRetentionPeriod), put-object with
# --object-lock-* (InvalidArgument for a past date), head-object lock fields,
# put/get-object-retention (GOVERNANCE shortened only with
# --bypass-governance-retention, COMPLIANCE extend-only),
# put/get-object-legal-hold, delete-object refused with AccessDenied and
# allowed with the bypass, delete-objects with a mixed batch,
# InvalidBucketState on suspending versioning, InvalidRequest on a bucket
# without lock.  Run by CTest (integration label); see harness.sh.
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

[[ -x /usr/bin/aws ]] || h_skip "/usr/bin/aws (awscli v2) not installed"
h_start

B=$(h_bucket lockcli)
P=$(h_bucket plaincli)
W="$H_TMP/work"
mkdir -p "$W"
printf 'ledger line\n' >"$W/rec.txt"
MD5=$(openssl md5 -binary <"$W/rec.txt" | base64)
soon=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
later=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)
shorter=$(date -u -d '+10 minutes' +%Y-%m-%dT%H:%M:%SZ)
past=$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%SZ)

# ---- buckets and configuration ---------------------------------------------
h_run "create-bucket with object lock" h_aws s3api create-bucket --bucket "$B" --object-lock-enabled-for-bucket
out=$(h_aws s3api get-bucket-versioning --bucket "$B" --query Status --output text 2>&1)
h_eq "lock bucket is versioned" "Enabled" "$out"
h_runfail "suspend versioning -> InvalidBucketState" InvalidBucketState \
    h_aws s3api put-bucket-versioning --bucket "$B" --versioning-configuration Status=Suspended
h_run "put-object-lock-configuration GOVERNANCE 1 day" h_aws s3api put-object-lock-configuration --bucket "$B" \
    --object-lock-configuration '{"ObjectLockEnabled":"Enabled","Rule":{"DefaultRetention":{"Mode":"GOVERNANCE","Days":1}}}'
out=$(h_aws s3api get-object-lock-configuration --bucket "$B" --output json 2>&1)
h_contains "configuration mode" "$out" '"Mode": "GOVERNANCE"'
h_contains "configuration days" "$out" '"Days": 1'
h_runfail "Days and Years -> MalformedXML" MalformedXML h_aws s3api put-object-lock-configuration --bucket "$B" \
    --object-lock-configuration '{"ObjectLockEnabled":"Enabled","Rule":{"DefaultRetention":{"Mode":"GOVERNANCE","Days":1,"Years":1}}}'
h_runfail "Days 0 -> InvalidRetentionPeriod" InvalidRetentionPeriod h_aws s3api put-object-lock-configuration --bucket "$B" \
    --object-lock-configuration '{"ObjectLockEnabled":"Enabled","Rule":{"DefaultRetention":{"Mode":"GOVERNANCE","Days":0}}}'

h_run "create plain bucket" h_aws s3api create-bucket --bucket "$P"
h_runfail "plain bucket: get-object-lock-configuration" ObjectLockConfigurationNotFoundError \
    h_aws s3api get-object-lock-configuration --bucket "$P"
h_runfail "plain bucket: lock headers -> InvalidRequest" InvalidRequest h_aws s3api put-object --bucket "$P" \
    --key k --body "$W/rec.txt" --content-md5 "$MD5" --object-lock-legal-hold-status ON

# ---- default retention, explicit headers -----------------------------------
h_run "put-object under the default" h_aws s3api put-object --bucket "$B" --key def --body "$W/rec.txt"
out=$(h_aws s3api head-object --bucket "$B" --key def --query ObjectLockMode --output text 2>&1)
h_eq "default retention applied" "GOVERNANCE" "$out"
vid_def=$(h_aws s3api head-object --bucket "$B" --key def --query VersionId --output text 2>&1)
h_runfail "retain-until in the past -> InvalidArgument" InvalidArgument h_aws s3api put-object --bucket "$B" \
    --key bad --body "$W/rec.txt" --content-md5 "$MD5" --object-lock-mode COMPLIANCE \
    --object-lock-retain-until-date "$past"
vid_c=$(h_aws s3api put-object --bucket "$B" --key comp --body "$W/rec.txt" --content-md5 "$MD5" \
    --object-lock-mode COMPLIANCE --object-lock-retain-until-date "$soon" --query VersionId --output text 2>&1)
out=$(h_aws s3api head-object --bucket "$B" --key comp --output json 2>&1)
h_contains "head-object mode" "$out" '"ObjectLockMode": "COMPLIANCE"'
h_contains "head-object retain-until" "$out" "\"ObjectLockRetainUntilDate\": \"${soon%Z}"

# ---- governance: bypass ---------------------------------------------------------
h_runfail "delete governance version -> AccessDenied" AccessDenied \
    h_aws s3api delete-object --bucket "$B" --key def --version-id "$vid_def"
h_runfail "shorten governance without bypass" AccessDenied h_aws s3api put-object-retention --bucket "$B" \
    --key def --version-id "$vid_def" --retention "Mode=GOVERNANCE,RetainUntilDate=$shorter"
h_run "shorten governance with bypass" h_aws s3api put-object-retention --bucket "$B" --key def \
    --version-id "$vid_def" --bypass-governance-retention --retention "Mode=GOVERNANCE,RetainUntilDate=$shorter"
out=$(h_aws s3api get-object-retention --bucket "$B" --key def --version-id "$vid_def" --query Retention.RetainUntilDate --output text 2>&1)
h_contains "get-object-retention after shortening" "$out" "${shorter%Z}"
h_run "delete governance version with bypass" h_aws s3api delete-object --bucket "$B" --key def \
    --version-id "$vid_def" --bypass-governance-retention

# ---- compliance: extend only -----------------------------------------------------
h_runfail "shorten compliance even with bypass" AccessDenied h_aws s3api put-object-retention --bucket "$B" \
    --key comp --bypass-governance-retention --retention "Mode=COMPLIANCE,RetainUntilDate=$shorter"
h_runfail "compliance -> governance" AccessDenied h_aws s3api put-object-retention --bucket "$B" \
    --key comp --bypass-governance-retention --retention "Mode=GOVERNANCE,RetainUntilDate=$later"
h_run "extend compliance" h_aws s3api put-object-retention --bucket "$B" --key comp \
    --retention "Mode=COMPLIANCE,RetainUntilDate=$later"
out=$(h_aws s3api get-object-retention --bucket "$B" --key comp --query Retention.RetainUntilDate --output text 2>&1)
h_contains "compliance extended" "$out" "${later%Z}"
h_runfail "delete compliance version with bypass" AccessDenied \
    h_aws s3api delete-object --bucket "$B" --key comp --version-id "$vid_c" --bypass-governance-retention

# ---- legal hold ---------------------------------------------------------------------
h_run "put-object-legal-hold ON" h_aws s3api put-object-legal-hold --bucket "$B" --key comp --legal-hold Status=ON
out=$(h_aws s3api get-object-legal-hold --bucket "$B" --key comp --query LegalHold.Status --output text 2>&1)
h_eq "get-object-legal-hold" "ON" "$out"
h_run "put-object-legal-hold OFF" h_aws s3api put-object-legal-hold --bucket "$B" --key comp --legal-hold Status=OFF
out=$(h_aws s3api get-object-legal-hold --bucket "$B" --key comp --query LegalHold.Status --output text 2>&1)
h_eq "legal hold off" "OFF" "$out"

# ---- delete-objects: mixed batch ---------------------------------------------
vid_f=$(h_aws s3api put-object --bucket "$B" --key free --body "$W/rec.txt" --query VersionId --output text 2>&1)
h_run "retention off for free" h_aws s3api put-object-retention --bucket "$B" --key free \
    --version-id "$vid_f" --bypass-governance-retention --retention '{}'
out=$(h_aws s3api delete-objects --bucket "$B" --output json --delete \
    "{\"Objects\":[{\"Key\":\"free\",\"VersionId\":\"$vid_f\"},{\"Key\":\"comp\",\"VersionId\":\"$vid_c\"}]}" 2>&1)
h_contains "delete-objects deletes the unlocked key" "$out" "\"VersionId\": \"$vid_f\""
h_contains "delete-objects refuses the locked key" "$out" '"Code": "AccessDenied"'
out=$(h_aws s3api head-object --bucket "$B" --key comp --version-id "$vid_c" --query VersionId --output text 2>&1)
h_eq "locked version still there" "$vid_c" "$out"

# ---- a delete marker, and the bucket stays ------------------------------------
out=$(h_aws s3api delete-object --bucket "$B" --key comp --output json 2>&1)
h_contains "delete without version adds a marker" "$out" '"DeleteMarker": true'
h_runfail "delete-bucket with locked versions" BucketNotEmpty h_aws s3api delete-bucket --bucket "$B"

h_done
