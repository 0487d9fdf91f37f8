// app.js - the Strata web console: log in with access keys, browse
// buckets and objects, upload/download/delete, versions, object details,
// share links, bucket settings, and a health page over the admin API.  It
// talks to the S3 API and /strata/admin/v1/ only, every call signed in the
// page (sigv4.js).  The keys live in sessionStorage (gone when the tab
// closes), never in a URL; a share link holds the access key id and a
// signature only.
"use strict";

(() => {
  const ADMIN = "/strata/admin/v1/";
  const store = window.sessionStorage;
  const $ = (id) => document.getElementById(id);

  // ---- DOM helpers (no innerHTML: every text is a text node) ----------
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(e.dataset, v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const c of kids.flat()) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  // Views pass optional parts as null and groups as arrays: replaceChildren
  // would print those as "null" and "[object HTMLElement],...", so flatten
  // and drop them, as el() does.
  function show(...nodes) {
    const main = $("main");
    main.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined));
  }
  // Every route() starts a new page. A view notes the page it was started for
  // and draws (or reloads itself) only while that page is still current, so
  // data that arrives after the user moved on never covers the newer page.
  let page = 0;
  function showIf(forPage, ...nodes) {
    if (forPage === page) show(...nodes);
  }
  function fmtBytes(n) {
    n = Number(n);
    const u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + " " + u[i];
  }
  function status(msg, isError) {
    const s = $("status");
    s.textContent = msg || "";
    s.className = isError ? "error" : "";
  }

  // ---- credentials and signed calls -----------------------------------
  function creds() {
    const ak = store.getItem("strata.ak"), sk = store.getItem("strata.sk");
    return ak && sk ? { ak, sk, region: store.getItem("strata.region") || "us-east-1" } : null;
  }

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message || code || "HTTP " + status);
      this.status = status;
      this.code = code || "HTTP" + status;
    }
  }

  // The error of a non-2xx answer: S3 XML or admin JSON.
  function parseError(status, text) {
    try {
      const j = JSON.parse(text);
      if (j && j.Code) return new ApiError(status, j.Code, j.Message);
    } catch (e) { /* not JSON */ }
    const doc = new DOMParser().parseFromString(text || "<x/>", "application/xml");
    const code = doc.getElementsByTagName("Code")[0];
    const msg = doc.getElementsByTagName("Message")[0];
    return new ApiError(status, code && code.textContent, msg && msg.textContent);
  }

  // One signed call.  opts: {query, body (string), headers, as: "text" |
  // "blob", creds}.  Resolves {status, text|blob, headers}; rejects
  // ApiError.
  async function call(method, path, opts = {}) {
    const c = opts.creds || creds();
    if (!c) throw new ApiError(0, "NotLoggedIn", "log in first");
    const body = opts.body === undefined ? null : opts.body;
    const payloadHash = body === null ? StrataSig.EMPTY_SHA256 : await StrataSig.sha256Hex(body);
    const s = await StrataSig.sign({ method, path, query: opts.query, headers: opts.headers,
                                     payloadHash }, c);
    let resp;
    try {
      resp = await fetch(s.url, { method, headers: s.headers, body, credentials: "omit",
                                  cache: "no-store", redirect: "error" });
    } catch (e) {
      throw new ApiError(0, "NetworkError", "cannot reach the server: " + e.message);
    }
    if (!resp.ok) throw parseError(resp.status, await resp.text());
    const out = { status: resp.status, headers: resp.headers };
    if (opts.as === "blob") out.blob = await resp.blob();
    else out.text = await resp.text();
    return out;
  }
  async function callXml(method, path, opts) {
    const r = await call(method, path, opts);
    return new DOMParser().parseFromString(r.text, "application/xml");
  }
  async function callJson(method, path) {
    const r = await call(method, ADMIN + path);
    return JSON.parse(r.text);
  }
  const text = (node, tag) => {
    const e = node.getElementsByTagName(tag)[0];
    return e ? e.textContent : "";
  };
  const children = (node, tag) => Array.from(node.children).filter((c) => c.localName === tag);

  // ---- login ------------------------------------------------------------
  function loginMessage(err, ak) {
    switch (err.code) {
      case "SignatureDoesNotMatch":
        return "Wrong secret key for access key " + ak + ".";
      case "InvalidAccessKeyId":
        return err.message && /disabled/i.test(err.message)
          ? "Access key " + ak + " is disabled." : "Unknown access key " + ak + ".";
      case "RequestTimeTooSkewed":
        return "This computer's clock differs from the server's by more than 15 minutes.";
      default:
        return "Log in failed: " + err.code + (err.message ? " - " + err.message : "");
    }
  }

  function viewLogin(msg) {
    const err = el("p", { id: "login-error", class: "error", role: "alert" }, msg || "");
    const ak = el("input", { id: "ak", name: "ak", autocomplete: "username", required: true });
    const sk = el("input", { id: "sk", name: "sk", type: "password", autocomplete: "current-password",
                             required: true });
    const region = el("input", { id: "region", name: "region", value: "us-east-1" });
    const form = el("form", { id: "login", onsubmit: async (ev) => {
      ev.preventDefault();
      err.textContent = "";
      const c = { ak: ak.value.trim(), sk: sk.value, region: region.value.trim() || "us-east-1" };
      try {
        await call("GET", "/", { creds: c });
      } catch (e) {
        err.textContent = loginMessage(e, c.ak);
        return;
      }
      store.setItem("strata.ak", c.ak);
      store.setItem("strata.sk", c.sk);
      store.setItem("strata.region", c.region);
      sk.value = "";
      go("#/buckets");
    } },
      el("h2", {}, "Log in"),
      el("label", { for: "ak" }, "Access key"), ak,
      el("label", { for: "sk" }, "Secret key"), sk,
      el("label", { for: "region" }, "Region"), region,
      el("button", { id: "login-btn", type: "submit" }, "Log in"), err);
    if (!StrataSig.available())
      err.textContent = "This browser offers no WebCrypto here: open the console over https " +
        "or from 127.0.0.1/localhost.";
    $("nav").hidden = true;
    show(form);
    ak.focus();
  }

  function logout() {
    store.removeItem("strata.ak");
    store.removeItem("strata.sk");
    store.removeItem("strata.region");
    stopCharts();
    go("#/");
  }

  // Navigate; hashchange runs route(), an unchanged hash does not.
  function go(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  }

  // ---- buckets ------------------------------------------------------------
  async function viewBuckets() {
    const forPage = page;
    const doc = await callXml("GET", "/");
    const rows = Array.from(doc.getElementsByTagName("Bucket")).map((b) => {
      const name = text(b, "Name");
      return el("tr", { dataset: { bucket: name } },
        el("td", {}, el("a", { href: "#/b/" + encodeURIComponent(name) + "/", class: "bucket-link" }, name)),
        el("td", {}, text(b, "CreationDate")));
    });
    const name = el("input", { id: "bucket-name", placeholder: "new-bucket-name", required: true,
                               pattern: "[a-z0-9][a-z0-9.\\-]{1,61}[a-z0-9]" });
    const lock = el("input", { id: "bucket-lock", type: "checkbox" });
    const create = el("form", { id: "create-bucket-form", onsubmit: async (ev) => {
      ev.preventDefault();
      const headers = lock.checked ? { "x-amz-bucket-object-lock-enabled": "true" } : {};
      try {
        await call("PUT", "/" + name.value, { headers });
        status("Created bucket " + name.value);
        if (forPage === page) viewBuckets().catch(failed);
      } catch (e) { failed(e); }
    } }, name, el("label", { class: "inline" }, lock, " Object Lock"),
      el("button", { id: "create-bucket", type: "submit" }, "Create bucket"));
    showIf(forPage, el("h2", {}, "Buckets"), create,
      el("table", { id: "buckets" }, el("thead", {}, el("tr", {}, el("th", {}, "Name"), el("th", {}, "Created"))),
        el("tbody", {}, rows)),
      rows.length ? null : el("p", { class: "muted" }, "No buckets yet."));
  }

  // Versioning, Object Lock and lifecycle of a bucket.
  async function bucketSettings(bucket, box) {
    const get = async (sub) => {
      try {
        return await callXml("GET", "/" + bucket, { query: [[sub, ""]] });
      } catch (e) {
        if (e.status === 404) return null; // not configured
        throw e;
      }
    };
    const [ver, lock, lc] = await Promise.all([get("versioning"), get("object-lock"), get("lifecycle")]);
    const vs = ver && text(ver, "Status");
    let lockText = "off";
    if (lock && text(lock, "ObjectLockEnabled") === "Enabled") {
      const mode = text(lock, "Mode");
      const days = text(lock, "Days"), years = text(lock, "Years");
      lockText = "enabled" + (mode ? `, default ${mode} ${days ? days + " days" : years + " years"}` : ", no default retention");
    }
    const rules = lc ? Array.from(lc.getElementsByTagName("Rule")).map((r) => {
      const parts = [text(r, "ID") || "(no id)", text(r, "Status")];
      const exp = r.getElementsByTagName("Expiration")[0];
      if (exp) parts.push("expire after " + (text(exp, "Days") ? text(exp, "Days") + " days" : text(exp, "Date")));
      const nce = r.getElementsByTagName("NoncurrentVersionExpiration")[0];
      if (nce) parts.push("noncurrent after " + text(nce, "NoncurrentDays") + " days");
      const ab = r.getElementsByTagName("AbortIncompleteMultipartUpload")[0];
      if (ab) parts.push("abort uploads after " + text(ab, "DaysAfterInitiation") + " days");
      const pf = text(r, "Prefix");
      if (pf) parts.push("prefix " + pf);
      return el("li", {}, parts.join(", "));
    }) : [];
    box.replaceChildren(el("dl", { id: "bucket-settings" },
      el("dt", {}, "Versioning"), el("dd", { id: "set-versioning" }, vs || "never enabled"),
      el("dt", {}, "Object Lock"), el("dd", { id: "set-lock" }, lockText),
      el("dt", {}, "Lifecycle"), el("dd", { id: "set-lifecycle" },
        rules.length ? el("ul", {}, rules) : "no rules")));
  }

  const lastUpload = { max: 1, value: 0 };

  function upload(bucket, key, file, bar, done) {
    StrataSig.sign({ method: "PUT", path: "/" + bucket + "/" + key,
                     headers: { "content-type": file.type || "application/octet-stream" },
                     payloadHash: "UNSIGNED-PAYLOAD" }, creds()).then((s) => {
      const x = new XMLHttpRequest();
      x.open("PUT", s.url);
      for (const [k, v] of Object.entries(s.headers)) x.setRequestHeader(k, v);
      x.upload.addEventListener("progress", (ev) => {
        if (ev.lengthComputable) {
          bar.max = lastUpload.max = ev.total;
          bar.value = lastUpload.value = ev.loaded;
        }
      });
      x.onload = () => {
        if (x.status >= 200 && x.status < 300) {
          bar.value = bar.max;
          done(null);
        } else {
          done(parseError(x.status, x.responseText));
        }
      };
      x.onerror = () => done(new ApiError(0, "NetworkError", "upload failed: connection lost"));
      x.send(file);
    }, done);
  }

  async function download(bucket, key, versionId) {
    const query = versionId ? [["versionId", versionId]] : [];
    const r = await call("GET", "/" + bucket + "/" + key, { query, as: "blob" });
    const url = URL.createObjectURL(r.blob);
    const a = el("a", { href: url, download: key.split("/").pop() || "download" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    status("Downloaded " + key);
  }

  // A button that asks once more before doing fn.
  function confirmButton(label, cls, fn, data) {
    const b = el("button", { type: "button", class: cls, dataset: data });
    b.textContent = label;
    b.addEventListener("click", () => {
      if (!b.classList.contains("armed")) {
        b.classList.add("armed");
        b.textContent = "Really " + label.toLowerCase() + "?";
        return;
      }
      fn();
    });
    return b;
  }

  async function viewBucket(bucket, prefix) {
    const forPage = page;
    const doc = await callXml("GET", "/" + bucket, { query: [["list-type", "2"], ["delimiter", "/"],
                                                             ["prefix", prefix], ["max-keys", "1000"]] });
    const here = "#/b/" + encodeURIComponent(bucket) + "/";
    const crumbs = [el("a", { href: "#/buckets" }, "Buckets"), " / ",
                    el("a", { href: here }, bucket)];
    let acc = "";
    for (const part of prefix.split("/").filter(Boolean)) {
      acc += part + "/";
      crumbs.push(" / ", el("a", { href: here + encodeURIComponent(acc) }, part));
    }
    const reload = () => { if (forPage === page) viewBucket(bucket, prefix).catch(failed); };
    const folders = Array.from(doc.getElementsByTagName("CommonPrefixes")).map((p) => {
      const pf = text(p, "Prefix");
      return el("tr", { class: "folder", dataset: { prefix: pf } },
        el("td", {}, el("a", { href: here + encodeURIComponent(pf) }, pf.slice(prefix.length))),
        el("td", {}), el("td", {}), el("td", {}));
    });
    const files = children(doc.documentElement, "Contents").map((o) => {
      const key = text(o, "Key");
      return el("tr", { class: "object", dataset: { key } },
        el("td", { class: "key" }, key.slice(prefix.length)),
        el("td", { class: "num" }, fmtBytes(text(o, "Size"))),
        el("td", {}, text(o, "LastModified")),
        el("td", { class: "actions" },
          el("button", { type: "button", class: "download", dataset: { key },
                         onclick: () => download(bucket, key).catch(failed) }, "Download"),
          el("button", { type: "button", class: "versions", dataset: { key },
                         onclick: () => showVersions(bucket, key).catch(failed) }, "Versions"),
          el("button", { type: "button", class: "details", dataset: { key },
                         onclick: () => showDetails(bucket, key).catch(failed) }, "Details"),
          el("button", { type: "button", class: "share", dataset: { key },
                         onclick: () => showShare(bucket, key) }, "Share"),
          confirmButton("Delete", "delete", async () => {
            try {
              await call("DELETE", "/" + bucket + "/" + key);
              status("Deleted " + key);
              reload();
            } catch (e) { failed(e); }
          }, { key })));
    });
    const input = el("input", { id: "upload-input", type: "file", multiple: true });
    // The bar survives the listing's refresh: it shows the last upload.
    const bar = el("progress", { id: "upload-progress", max: lastUpload.max, value: lastUpload.value });
    const upBtn = el("button", { id: "upload-btn", type: "button", onclick: () => {
      const list = Array.from(input.files);
      if (!list.length) { status("Choose a file first", true); return; }
      const next = () => {
        const f = list.shift();
        if (!f) { status("Uploaded"); reload(); return; }
        bar.value = lastUpload.value = 0;
        status("Uploading " + f.name + " ...");
        upload(bucket, prefix + f.name, f, bar, (err) => (err ? failed(err) : next()));
      };
      next();
    } }, "Upload");
    const settings = el("div", { id: "settings-box" }, "loading settings ...");
    const versionsBox = el("div", { id: "versions-box" });
    const detailsBox = el("div", { id: "details-box" });
    const shareBox = el("div", { id: "share-box" });
    showIf(forPage, el("h2", {}, crumbs),
      el("div", { class: "toolbar" }, input, upBtn, bar),
      el("table", { id: "objects" },
        el("thead", {}, el("tr", {}, el("th", {}, "Name"), el("th", {}, "Size"), el("th", {}, "Modified"), el("th", {}))),
        el("tbody", {}, folders, files)),
      files.length || folders.length ? null : el("p", { class: "muted", id: "empty" }, "No objects here."),
      text(doc, "IsTruncated") === "true" ? el("p", { class: "muted" }, "Only the first 1000 entries are shown.") : null,
      shareBox, detailsBox, versionsBox,
      el("h3", {}, "Settings"), settings);
    if (forPage !== page) return;
    bucketSettings(bucket, settings).catch((e) => settings.replaceChildren("settings: " + e.message));
  }

  async function showVersions(bucket, key) {
    const doc = await callXml("GET", "/" + bucket, { query: [["versions", ""], ["prefix", key]] });
    const rows = Array.from(doc.documentElement.children)
      .filter((v) => (v.localName === "Version" || v.localName === "DeleteMarker") && text(v, "Key") === key)
      .map((v) => {
        const id = text(v, "VersionId");
        const marker = v.localName === "DeleteMarker";
        return el("tr", { class: "version", dataset: { version: id } },
          el("td", {}, id), el("td", {}, marker ? "delete marker" : fmtBytes(text(v, "Size"))),
          el("td", {}, text(v, "LastModified")), el("td", {}, text(v, "IsLatest") === "true" ? "latest" : ""),
          el("td", { class: "actions" }, marker ? null : [el("button", { type: "button",
            onclick: () => download(bucket, key, id).catch(failed) }, "Download"),
            el("button", { type: "button", class: "details",
              onclick: () => showDetails(bucket, key, id).catch(failed) }, "Details")]));
      });
    $("versions-box").replaceChildren(el("h3", {}, "Versions of " + key),
      el("table", { id: "versions" }, el("tbody", {}, rows)));
  }

  // ---- object details and share links ---------------------------------------
  // An object's (or one version's) HEAD, tags, retention and legal hold.
  async function showDetails(bucket, key, versionId) {
    const path = "/" + bucket + "/" + key;
    const vq = versionId ? [["versionId", versionId]] : [];
    // A sub-resource, or why there is none: 404 = never set; 400
    // InvalidRequest = the bucket has no Object Lock.
    const sub = async (name) => {
      try {
        return { doc: await callXml("GET", path, { query: [[name, ""]].concat(vq) }) };
      } catch (e) {
        if (e.status === 404) return { none: "none" };
        if (e.status === 400 && e.code === "InvalidRequest") return { none: "not an Object Lock bucket" };
        throw e;
      }
    };
    const [head, tags, ret, hold] = await Promise.all([call("HEAD", path, { query: vq }),
      sub("tagging"), sub("retention"), sub("legal-hold")]);
    const h = head.headers;
    const size = Number(h.get("content-length"));
    const meta = [];
    for (const [k, v] of h) if (k.startsWith("x-amz-meta-")) meta.push([k.slice(11), v]);
    meta.sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const pairs = (id, list) => (list.length
      ? el("ul", { id, class: "pairs" }, list.map(([k, v]) => el("li", { dataset: { name: k } }, k + ": " + v)))
      : el("span", { id }, "none"));
    const tagList = tags.doc ? Array.from(tags.doc.getElementsByTagName("Tag"))
      .map((t) => [text(t, "Key"), text(t, "Value")]) : [];
    const retText = ret.doc ? text(ret.doc, "Mode") + " until " + text(ret.doc, "RetainUntilDate") : ret.none;
    const holdText = hold.doc ? text(hold.doc, "Status") : hold.none;
    const etag = (h.get("etag") || "").replace(/^"|"$/g, "");
    const row = (label, id, value) => [el("dt", {}, label), el("dd", { id }, value)];
    $("details-box").replaceChildren(el("h3", {}, "Details of " + key + (versionId ? " (version " + versionId + ")" : "")),
      el("dl", { id: "details" },
        row("Size", "d-size", size + (size === 1 ? " byte" : " bytes") + (size >= 1024 ? " (" + fmtBytes(size) + ")" : "")),
        row("Last modified", "d-modified", h.get("last-modified") || "-"),
        row("Content type", "d-ctype", h.get("content-type") || "-"),
        row("ETag", "d-etag", etag || "-"),
        row("Storage class", "d-class", h.get("x-amz-storage-class") || "STANDARD"),
        // S3 sends no version id for objects of a never-versioned bucket.
        row("Version id", "d-version", h.get("x-amz-version-id") || "none (bucket not versioned)"),
        row("Metadata", "d-meta-box", pairs("d-meta", meta)),
        row("Tags", "d-tags-box", pairs("d-tags", tagList)),
        row("Retention", "d-retention", retText),
        row("Legal hold", "d-hold", holdText)));
  }

  // The share form: a presigned GET of the object, valid for a chosen
  // time, copied to the clipboard.  It is made in the page with the
  // logged-in keys (no server call), so it stops working when it expires
  // or when those keys are disabled or removed.
  function showShare(bucket, key) {
    const name = key.split("/").pop() || "download";
    const expiry = el("select", { id: "share-expiry" },
      el("option", { value: "3600" }, "1 hour"), el("option", { value: "86400", selected: true }, "1 day"),
      el("option", { value: "604800" }, "7 days"), el("option", { value: "custom" }, "other (seconds)"));
    const secs = el("input", { id: "share-seconds", type: "number", min: 1, max: StrataSig.MAX_EXPIRES,
                               step: 1, value: "3600", hidden: true });
    expiry.addEventListener("change", () => { secs.hidden = expiry.value !== "custom"; });
    const attach = el("input", { id: "share-attachment", type: "checkbox", checked: true });
    const out = el("input", { id: "share-url", readonly: true, size: 80, placeholder: "the link appears here" });
    const note = el("p", { id: "share-note", class: "muted" });
    const make = async (ev) => {
      ev.preventDefault();
      const n = Number(expiry.value === "custom" ? secs.value : expiry.value);
      if (!Number.isInteger(n) || n < 1 || n > StrataSig.MAX_EXPIRES) {
        status("The expiry must be a whole number of seconds from 1 to " + StrataSig.MAX_EXPIRES + " (7 days).", true);
        return;
      }
      // As an attachment the browser saves the file instead of showing
      // it at this origin (an HTML object would run as the console).
      const q = attach.checked
        ? [["response-content-disposition", `attachment; filename*=UTF-8''${StrataSig.uriEncode(name, false)}`]] : [];
      const url = await StrataSig.presign({ method: "GET", path: "/" + bucket + "/" + key, query: q }, creds(), n);
      out.value = url;
      const until = new Date(Date.now() + n * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
      let copied = true;
      try {
        await navigator.clipboard.writeText(url);
      } catch (e) {
        out.select(); // no clipboard permission: the older copy command
        copied = document.execCommand && document.execCommand("copy");
      }
      note.textContent = (copied ? "Copied to the clipboard. " : "Copy the link above. ") +
        "Anyone with it can download " + key + " until " + until + ".";
      status(copied ? "Share link copied" : "Share link made");
    };
    $("share-box").replaceChildren(el("h3", {}, "Share " + key),
      el("form", { id: "share-form", class: "toolbar", onsubmit: (ev) => make(ev).catch(failed) },
        el("label", { for: "share-expiry" }, "Link valid for"), expiry, secs,
        el("label", { class: "inline" }, attach, " download as a file"),
        el("button", { id: "share-make", type: "submit" }, "Create link and copy")),
      out, note);
  }

  // ---- health ---------------------------------------------------------------
  let chartTimer = null;
  const samples = []; // {t, requests, bytesIn, bytesOut}

  function stopCharts() {
    if (chartTimer) clearInterval(chartTimer);
    chartTimer = null;
  }

  // Prometheus text -> [{name, labels, value}].
  function parseMetrics(txt) {
    const out = [];
    for (const line of txt.split("\n")) {
      if (!line || line[0] === "#") continue;
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
      if (!m) continue;
      const labels = {};
      if (m[3]) for (const lm of m[3].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[lm[1]] = lm[2];
      out.push({ name: m[1], labels, value: Number(m[4]) });
    }
    return out;
  }
  const sum = (ms, name) => ms.filter((m) => m.name === name).reduce((a, m) => a + m.value, 0);

  function drawBars(canvas, items, unit) {
    const g = canvas.getContext("2d");
    const w = canvas.width, h = canvas.height;
    g.clearRect(0, 0, w, h);
    const max = Math.max(1, ...items.map((i) => i.value));
    const bw = Math.max(4, Math.floor((w - 20) / Math.max(1, items.length)) - 6);
    g.font = "11px sans-serif";
    items.forEach((it, i) => {
      const x = 10 + i * (bw + 6);
      const bh = Math.round((h - 40) * it.value / max);
      g.fillStyle = it.color || "#2a6fb0";
      g.fillRect(x, h - 20 - bh, bw, bh);
      g.fillStyle = "#222";
      g.fillText(it.label.slice(0, Math.max(3, Math.floor(bw / 6))), x, h - 6);
      g.fillText(unit(it.value), x, h - 24 - bh);
    });
  }

  function drawLine(canvas, points, label) {
    const g = canvas.getContext("2d");
    const w = canvas.width, h = canvas.height;
    g.clearRect(0, 0, w, h);
    g.strokeStyle = "#999";
    g.strokeRect(30, 10, w - 40, h - 30);
    g.fillStyle = "#222";
    g.font = "11px sans-serif";
    const max = Math.max(1, ...points);
    g.fillText(max.toFixed(1), 2, 16);
    g.fillText("0", 18, h - 20);
    g.fillText(label, 40, h - 4);
    if (points.length < 2) return;
    g.strokeStyle = "#2a6fb0";
    g.beginPath();
    points.forEach((p, i) => {
      const x = 30 + (w - 40) * i / (points.length - 1);
      const y = h - 20 - (h - 30) * p / max;
      if (i) g.lineTo(x, y); else g.moveTo(x, y);
    });
    g.stroke();
  }

  // An admin API document for an admin page, or null once the page says
  // that it needs an admin user (the API answered 403 AccessDenied).
  async function adminJson(forPage, path, title, id, what) {
    try {
      return await callJson("GET", path);
    } catch (e) {
      if (e.status === 403 && e.code === "AccessDenied") {
        showIf(forPage, el("h2", {}, title), el("p", { class: "error", id: id },
          what + " needs an admin user (root or one named by --admin-users)."));
        return null;
      }
      throw e;
    }
  }

  async function viewHealth() {
    const forPage = page;
    const info = await adminJson(forPage, "info", "Health", "health-error", "The health page");
    if (!info) return;
    const [heal, ilm] = await Promise.all([callJson("GET", "heal/status"), callJson("GET", "ilm/status")]);
    const sets = (info.sets || []).map((s) => el("tr", {},
      el("td", {}, String(s.index)), el("td", {}, `${s.data}+${s.parity}`),
      el("td", {}, `${s.write_quorum}/${s.read_quorum}`),
      el("td", {}, String(s.drives.filter((d) => d.state === "online").length) + "/" + s.drives.length),
      el("td", {}, Object.entries(s.errors || {}).map(([k, v]) => `${k} ${v}`).join(", "))));
    const drives = [];
    for (const s of info.sets || []) for (const d of s.drives) drives.push(el("tr", { class: "drive " + d.state },
      el("td", {}, `${s.index}/${d.index}`), el("td", { class: "path" }, d.path), el("td", { class: "state" }, d.state),
      el("td", { class: "num" }, d.total_bytes !== undefined ? fmtBytes(d.used_bytes) + " / " + fmtBytes(d.total_bytes) : "-")));
    const tiers = Array.isArray(info.tiers) && info.tiers.length
      ? [el("h3", {}, "Tiers"), el("ul", { id: "tiers" }, info.tiers.map((t) => el("li", { dataset: { tier: t.name } },
        `${t.name}: ${t.classes && t.classes.length ? t.classes.join(", ") : "no storage class"}; ` +
        `${t.sets_total} set${t.sets_total === 1 ? "" : "s"}, ${t.drives_online}/${t.drives_total} drives online`)))]
      : null;
    const last = heal.last || {};
    const healText = heal.state === "running" ? "running since " + new Date(heal.started * 1000).toLocaleString()
      : "idle" + (last.result ? `; last run ${last.result}: ${last.objects_scanned} objects scanned, ` +
        `${last.records_healed} records and ${last.shards_healed} shards healed` : "; never run");
    const ilmText = !ilm.enabled ? "scanner off"
      : `passes ${ilm.total ? ilm.total.passes : 0}; last pass scanned ${ilm.last ? ilm.last.scanned : 0}, ` +
        `expired ${ilm.last ? ilm.last.expired : 0}`;
    const healBtn = el("button", { type: "button", id: "heal-start", onclick: async () => {
      try { await call("POST", ADMIN + "heal/start"); status("Heal started"); if (forPage === page) viewHealth().catch(failed); } catch (e) { failed(e); }
    } }, "Start heal");
    const cReq = el("canvas", { id: "chart-requests", width: 520, height: 160 });
    const cOps = el("canvas", { id: "chart-ops", width: 520, height: 160 });
    const cDrives = el("canvas", { id: "chart-drives", width: 520, height: 160 });
    showIf(forPage, el("h2", {}, "Health"),
      el("p", {}, `Strata ${info.version}, up ${Math.round(info.uptime_s)} s, ${info.drives_online}/${info.drives_total} drives online, ${info.inflight} requests in flight.`),
      el("h3", {}, "Sets"),
      el("table", { id: "sets" }, el("thead", {}, el("tr", {}, ["Set", "Data+parity", "Quorum w/r", "Online", "Errors"].map((h) => el("th", {}, h)))),
        el("tbody", {}, sets)),
      el("h3", {}, "Drives"),
      el("table", { id: "drives" }, el("thead", {}, el("tr", {}, ["Drive", "Path", "State", "Used / size"].map((h) => el("th", {}, h)))),
        el("tbody", {}, drives)),
      tiers,
      el("h3", {}, "Heal"), el("p", { id: "heal-state" }, healText, " ", healBtn),
      el("h3", {}, "Lifecycle"), el("p", { id: "ilm-state" }, ilmText),
      el("h3", {}, "Charts"),
      el("div", { class: "charts" },
        el("figure", {}, cReq, el("figcaption", {}, "Requests per second (sampled every 5 s)")),
        el("figure", {}, cOps, el("figcaption", {}, "Requests by operation since start")),
        el("figure", {}, cDrives, el("figcaption", {}, "Drive space used"))));
    if (forPage !== page) return;
    drawBars(cDrives, (info.sets || []).flatMap((s) => s.drives.map((d) => ({
      label: `${s.index}/${d.index}`, value: d.used_bytes || 0, color: d.state === "online" ? "#2a6fb0" : "#b03a2a" }))), fmtBytes);
    const sample = async () => {
      if (!cReq.isConnected) { stopCharts(); return; }
      const ms = parseMetrics((await call("GET", ADMIN + "metrics")).text);
      samples.push({ t: Date.now(), requests: sum(ms, "strata_http_requests_total") });
      while (samples.length > 60) samples.shift();
      const rates = [];
      for (let i = 1; i < samples.length; i++)
        rates.push((samples[i].requests - samples[i - 1].requests) * 1000 / Math.max(1, samples[i].t - samples[i - 1].t));
      drawLine(cReq, rates, "req/s");
      const ops = ms.filter((m) => m.name === "strata_s3_request_duration_seconds_count" && m.value > 0)
        .map((m) => ({ label: m.labels.op, value: m.value })).sort((a, b) => b.value - a.value).slice(0, 10);
      drawBars(cOps, ops, (v) => String(v));
    };
    stopCharts();
    samples.length = 0;
    await sample();
    chartTimer = setInterval(() => sample().catch(() => stopCharts()), 5000);
  }

  // ---- users (admins) ---------------------------------------------------------
  async function viewUsers() {
    const forPage = page;
    const doc = await adminJson(forPage, "users", "Users", "users-error", "Managing users");
    if (!doc) return;
    const reload = () => { if (forPage === page) viewUsers().catch(failed); };
    const act = (method, path, msg) => async () => {
      try {
        await call(method, ADMIN + path);
        status(msg);
        reload();
      } catch (e) { failed(e); }
    };
    const rows = doc.users.map((u) => {
      const ak = encodeURIComponent(u.access_key);
      const role = u.root ? "root" : u.admin ? "admin" : "user";
      return el("tr", { class: "user " + u.status, dataset: { user: u.access_key } },
        el("td", {}, u.access_key), el("td", {}, u.name), el("td", { class: "ustatus" }, u.status),
        el("td", {}, role),
        el("td", { class: "actions" }, u.root ? null : [
          u.status === "enabled"
            ? el("button", { type: "button", class: "disable", onclick: act("POST", `users/${ak}/disable`, "Disabled " + u.access_key) }, "Disable")
            : el("button", { type: "button", class: "enable", onclick: act("POST", `users/${ak}/enable`, "Enabled " + u.access_key) }, "Enable"),
          confirmButton("Remove", "remove", act("DELETE", `users/${ak}`, "Removed " + u.access_key))]));
    });
    const ak = el("input", { id: "user-ak", placeholder: "access key", required: true, minlength: 3 });
    const sk = el("input", { id: "user-sk", type: "password", placeholder: "secret (8+ characters)",
                             required: true, minlength: 8, autocomplete: "new-password" });
    const name = el("input", { id: "user-name", placeholder: "name (optional)" });
    const form = el("form", { id: "add-user-form", onsubmit: async (ev) => {
      ev.preventDefault();
      const body = JSON.stringify(name.value ? { secret: sk.value, name: name.value } : { secret: sk.value });
      try {
        await call("PUT", ADMIN + "users/" + encodeURIComponent(ak.value.trim()),
                   { body, headers: { "content-type": "application/json" } });
        status("Added " + ak.value.trim());
        reload();
      } catch (e) { failed(e); }
    } }, ak, sk, name, el("button", { id: "add-user", type: "submit" }, "Add user"));
    showIf(forPage, el("h2", {}, "Users"),
      el("p", { class: "muted" }, doc.users_file ? "Stored in " + doc.users_file + "." :
        "The daemon runs without --users: users cannot be added here."),
      form,
      el("table", { id: "users" },
        el("thead", {}, el("tr", {}, ["Access key", "Name", "Status", "Role", ""].map((h) => el("th", {}, h)))),
        el("tbody", {}, rows)));
  }

  // ---- routing ----------------------------------------------------------------
  function failed(e) {
    if (e && (e.code === "SignatureDoesNotMatch" || e.code === "InvalidAccessKeyId")) {
      logout();
      viewLogin(loginMessage(e, ""));
      return;
    }
    status((e && e.code ? e.code + ": " : "") + (e && e.message ? e.message : String(e)), true);
  }

  function route() {
    page++;
    status("");
    const c = creds();
    if (!c) { viewLogin(); return; }
    $("nav").hidden = false;
    $("who").textContent = c.ak;
    const h = location.hash || "#/buckets";
    let p;
    if (h.startsWith("#/b/")) {
      stopCharts();
      const rest = h.slice(4);
      const slash = rest.indexOf("/");
      const bucket = decodeURIComponent(slash < 0 ? rest : rest.slice(0, slash));
      const prefix = slash < 0 ? "" : decodeURIComponent(rest.slice(slash + 1));
      p = viewBucket(bucket, prefix);
    } else if (h === "#/health") {
      p = viewHealth();
    } else if (h === "#/users") {
      stopCharts();
      p = viewUsers();
    } else {
      stopCharts();
      p = viewBuckets();
    }
    p.catch(failed);
  }

  window.addEventListener("hashchange", route);
  document.addEventListener("DOMContentLoaded", () => {
    $("logout").addEventListener("click", logout);
    route();
  });
})();
