// sigv4.js - AWS Signature Version 4 for the console's S3 and admin API
// calls, with WebCrypto (SubtleCrypto HMAC-SHA256 and SHA-256).  The keys
// never leave the page: they sign the Authorization header of each request
// and are not put in any URL the page requests.  presign() makes the share
// links: the access key id and a signature (never the secret) in the query.
"use strict";

const StrataSig = (() => {
  const enc = new TextEncoder();
  const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  const MAX_EXPIRES = 604800; // a presigned URL lives at most a week (SigV4)

  function hex(buf) {
    return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  async function sha256Hex(data) {
    const bytes = typeof data === "string" ? enc.encode(data) : data;
    return hex(await crypto.subtle.digest("SHA-256", bytes));
  }

  async function hmac(key, msg) {
    const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" },
                                            false, ["sign"]);
    return new Uint8Array(await crypto.subtle.sign("HMAC", k, enc.encode(msg)));
  }

  // RFC 3986 unreserved characters stay, everything else is %XX (upper
  // case), as SigV4 wants; "/" stays in paths.
  function uriEncode(s, keepSlash) {
    let out = encodeURIComponent(s).replace(/[!'()*]/g,
      (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
    if (keepSlash) out = out.replace(/%2F/g, "/");
    return out;
  }

  // [[name, value], ...] -> the canonical (and sent) query string.
  function canonicalQuery(params) {
    return params.map(([k, v]) => [uriEncode(k, false), uriEncode(v == null ? "" : String(v), false)])
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
      .map(([k, v]) => k + "=" + v).join("&");
  }

  function available() {
    return typeof crypto !== "undefined" && crypto.subtle !== undefined;
  }

  // Signs one request.  req: {method, path (decoded, "/bucket/key"),
  // query: [[k, v]...], headers: {name: value} to sign besides host,
  // payloadHash (hex, or "UNSIGNED-PAYLOAD")}.  creds: {ak, sk, region}.
  // Returns {url, headers}: the URL to request (same origin) and the
  // headers to set on it (Authorization, x-amz-date, x-amz-content-sha256
  // and req.headers).
  // The request time "YYYYMMDDTHHMMSSZ" and the credential scope.
  function stamp(creds, now) {
    const t = (now || new Date()).toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
    return { t, scope: `${t.slice(0, 8)}/${creds.region}/s3/aws4_request` };
  }

  // The hex signature of one canonical request (header and query forms).
  async function signature(creds, t, scope, canonical) {
    const toSign = ["AWS4-HMAC-SHA256", t, scope, await sha256Hex(canonical)].join("\n");
    let key = await hmac(enc.encode("AWS4" + creds.sk), t.slice(0, 8));
    key = await hmac(key, creds.region);
    key = await hmac(key, "s3");
    key = await hmac(key, "aws4_request");
    return hex(await hmac(key, toSign));
  }

  async function sign(req, creds, now) {
    const { t, scope } = stamp(creds, now);
    const path = uriEncode(req.path, true);
    const query = canonicalQuery(req.query || []);
    const payload = req.payloadHash || EMPTY_SHA256;
    const hdrs = { host: location.host, "x-amz-content-sha256": payload, "x-amz-date": t };
    for (const [k, v] of Object.entries(req.headers || {})) hdrs[k.toLowerCase()] = String(v).trim();
    const names = Object.keys(hdrs).sort();
    const canonical = [req.method, path, query,
      names.map((n) => `${n}:${hdrs[n]}\n`).join(""), names.join(";"), payload].join("\n");
    const sig = await signature(creds, t, scope, canonical);
    const out = {};
    for (const n of names) if (n !== "host") out[n] = hdrs[n];
    out.authorization = `AWS4-HMAC-SHA256 Credential=${creds.ak}/${scope}, ` +
      `SignedHeaders=${names.join(";")}, Signature=${sig}`;
    return { url: path + (query ? "?" + query : ""), headers: out };
  }

  // A presigned URL (absolute, this origin) that lets anyone holding it
  // make this one request for `expires` seconds (1 .. 604800, SigV4's
  // week): only host is signed and the payload is UNSIGNED-PAYLOAD, as the
  // AWS SDKs presign.  req: {method, path, query: [[k, v]...]}.
  async function presign(req, creds, expires, now) {
    if (!Number.isInteger(expires) || expires < 1 || expires > MAX_EXPIRES)
      throw new RangeError("expiry must be 1 to " + MAX_EXPIRES + " seconds");
    const { t, scope } = stamp(creds, now);
    const path = uriEncode(req.path, true);
    const params = (req.query || []).concat([
      ["X-Amz-Algorithm", "AWS4-HMAC-SHA256"], ["X-Amz-Credential", `${creds.ak}/${scope}`],
      ["X-Amz-Date", t], ["X-Amz-Expires", String(expires)], ["X-Amz-SignedHeaders", "host"]]);
    const query = canonicalQuery(params);
    const canonical = [req.method, path, query, `host:${location.host}\n`, "host",
      "UNSIGNED-PAYLOAD"].join("\n");
    const sig = await signature(creds, t, scope, canonical);
    return `${location.origin}${path}?${query}&X-Amz-Signature=${sig}`;
  }

  return { sign, presign, sha256Hex, uriEncode, canonicalQuery, available, EMPTY_SHA256, MAX_EXPIRES };
})();
