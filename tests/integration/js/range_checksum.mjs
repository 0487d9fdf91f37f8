// range_checksum.mjs - aws-sdk-js v3 against a live Strata: PutObject (the
// SDK's default CRC32 trailer upload), then GetObject whole and by Range with
// ChecksumMode ENABLED, so the SDK validates every x-amz-checksum-* it is
// given against the bytes it received.  A whole-object checksum on a range
// answer fails here with "Checksum mismatch".  Driven by test_js_sdk.py,
// which starts the daemon and passes STRATA_ENDPOINT, STRATA_AK, STRATA_SK
// and STRATA_BUCKET.  Exits non-zero on the first failed check.
import { randomBytes } from "node:crypto";
import assert from "node:assert/strict";
import { S3Client, PutObjectCommand, GetObjectCommand } from "@aws-sdk/client-s3";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};

const s3 = new S3Client({
  endpoint: env("STRATA_ENDPOINT"),
  region: "us-east-1",
  forcePathStyle: true,
  credentials: { accessKeyId: env("STRATA_AK"), secretAccessKey: env("STRATA_SK") },
  maxAttempts: 1,
  requestChecksumCalculation: "WHEN_SUPPORTED",
  responseChecksumValidation: "WHEN_SUPPORTED",
});
const Bucket = env("STRATA_BUCKET");

async function get(Key, Range) {
  const r = await s3.send(new GetObjectCommand({ Bucket, Key, Range, ChecksumMode: "ENABLED" }));
  // The SDK checks the checksum while the body is read: this throws on a
  // mismatch.
  const body = Buffer.from(await r.Body.transformToByteArray());
  return { r, body };
}

let checks = 0;
for (const [Key, size] of [["small", 1000], ["big", 1536 * 1024 + 7]]) {
  const data = randomBytes(size);
  const put = await s3.send(
    new PutObjectCommand({ Bucket, Key, Body: data, ChecksumAlgorithm: "CRC32" }),
  );
  assert.ok(put.ChecksumCRC32, `${Key}: PutObject answered no CRC32`);

  const whole = await get(Key);
  assert.equal(whole.r.$metadata.httpStatusCode, 200);
  assert.ok(whole.body.equals(data), `${Key}: whole body differs`);
  assert.equal(whole.r.ChecksumCRC32, put.ChecksumCRC32, `${Key}: GET checksum != PUT checksum`);
  checks++;

  const ranges = [
    [0, 0],
    [10, 99],
    [size - 7, size - 1],
    [1, size - 2],
    [0, size - 1],
  ];
  if (size > 1024 * 1024) ranges.push([1024 * 1024 - 5, 1024 * 1024 + 4]); // across a stripe
  for (const [lo, hi] of ranges) {
    const { r, body } = await get(Key, `bytes=${lo}-${hi}`);
    assert.equal(r.$metadata.httpStatusCode, 206, `${Key} ${lo}-${hi}: status`);
    assert.ok(body.equals(data.subarray(lo, hi + 1)), `${Key} ${lo}-${hi}: bytes differ`);
    assert.equal(r.ContentRange, `bytes ${lo}-${hi}/${size}`);
    assert.equal(r.ChecksumCRC32, undefined, `${Key} ${lo}-${hi}: whole-object checksum sent`);
    checks++;
  }
}
console.log(`range_checksum: ${checks} checks passed`);
