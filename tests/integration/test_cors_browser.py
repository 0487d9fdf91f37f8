#!/usr/bin/python3
"""test_cors_browser.py - CORS checked by a real browser: Debian's chromium,
headless, driven by python3-selenium through chromium-driver.

A page served by a small loopback HTTP server (one origin) fetch()es objects
from strata (another origin: another port), PUTs one through a presigned
URL (a preflighted request) and uploads one with a POST form (FormData and
a signed POST policy).  On the bucket whose CORS rules allow the page's
origin every call succeeds and the script reads the exposed ETag; on the
bucket whose rules name another origin the browser blocks all of them (the
fetch rejects): the preflighted PUT never reaches strata, while the form
POST, a "simple" request, is sent but its answer is hidden from the script.  The results are checked
against what boto3 then finds stored.

chromium, chromium-driver and python3-selenium are installed by
deploy/install-deps.sh, so a missing browser is a failure, not a skip.
Run by CTest with /usr/bin/python3.
"""

import http.server
import json
import os
import shutil
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, free_port, log, run, test  # noqa: E402

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>strata cors</title></head><body>
<script>
const T = %s;
async function attempt(name, fn) {
  try { T.results[name] = await fn(); }
  catch (e) { T.results[name] = {blocked: String(e)}; }
}
async function main() {
  T.results = {};
  for (const side of ["allow", "deny"]) {
    const u = T[side];
    await attempt(side + "_get", async () => {
      const r = await fetch(u.get);
      return {status: r.status, body: await r.text(), etag: r.headers.get("ETag")};
    });
    await attempt(side + "_put", async () => {
      const r = await fetch(u.put, {method: "PUT", body: "put from the browser " + side,
                                   headers: {"Content-Type": "text/plain"}});
      return {status: r.status, etag: r.headers.get("ETag")};
    });
    await attempt(side + "_post", async () => {
      const fd = new FormData();
      for (const [k, v] of Object.entries(u.post.fields)) fd.append(k, v);
      fd.append("file", new Blob(["posted from the browser " + side]), "form.txt");
      const r = await fetch(u.post.url, {method: "POST", body: fd});
      return {status: r.status, body: await r.text()};
    });
  }
  window.__done = T.results;
}
main();
</script></body></html>
"""


class Page:
    """A loopback HTTP server serving one page from its own directory."""

    def __init__(self, html):
        self.dir = tempfile.mkdtemp(prefix="strata-cors-page.")
        with open(os.path.join(self.dir, "index.html"), "w") as f:
            f.write(html)
        handler = lambda *a, **kw: http.server.SimpleHTTPRequestHandler(  # noqa: E731
            *a, directory=self.dir, **kw)
        http.server.SimpleHTTPRequestHandler.log_message = lambda *a: None
        self.port = free_port()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.port}/index.html"
        self.origin = f"http://127.0.0.1:{self.port}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)


def browser(s):
    for path in (CHROMIUM, DRIVER):
        assert os.access(path, os.X_OK), f"{path} missing: run deploy/install-deps.sh"
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--no-first-run", "--no-proxy-server", "--disable-extensions",
              f"--user-data-dir={os.path.join(s.tmp, 'chrome-profile')}"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)


@test
def browser_fetch_put_post(s):
    c = s.client()
    allow, deny = s.bucket_name("allow"), s.bucket_name("deny")
    urls = {}
    page = None
    driver = None
    try:
        # The page's origin is known only once its server listens: start it
        # empty and write the page afterwards.
        page = Page("")
        for b in (allow, deny):
            c.create_bucket(Bucket=b)
            c.put_object(Bucket=b, Key="hello.txt", Body=f"hello from {b}".encode())
        rule = {"AllowedMethods": ["GET", "PUT", "POST"], "AllowedHeaders": ["*"],
                "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 5}
        c.put_bucket_cors(Bucket=allow, CORSConfiguration={
            "CORSRules": [dict(rule, AllowedOrigins=[page.origin])]})
        c.put_bucket_cors(Bucket=deny, CORSConfiguration={
            "CORSRules": [dict(rule, AllowedOrigins=["http://elsewhere.example"])]})
        for side, b in (("allow", allow), ("deny", deny)):
            post = c.generate_presigned_post(b, "posted.txt", ExpiresIn=300)
            urls[side] = {
                "get": c.generate_presigned_url("get_object",
                                                Params={"Bucket": b, "Key": "hello.txt"}),
                "put": c.generate_presigned_url("put_object",
                                                Params={"Bucket": b, "Key": "put.txt",
                                                        "ContentType": "text/plain"}),
                "post": {"url": post["url"], "fields": post["fields"]},
            }
        with open(os.path.join(page.dir, "index.html"), "w") as f:
            f.write(PAGE % json.dumps(urls))
        driver = browser(s)
        driver.set_script_timeout(60)
        driver.get(page.url)
        res = WebDriverWait(driver, 60).until(lambda d: d.execute_script("return window.__done"))
        log(f"browser results: {json.dumps(res)}")
        # allowed: the script reads bodies and the exposed ETag
        g = res["allow_get"]
        assert g.get("status") == 200 and g.get("body") == f"hello from {allow}", g
        head = c.head_object(Bucket=allow, Key="hello.txt")
        assert g.get("etag") == head["ETag"], (g, head["ETag"])
        p = res["allow_put"]
        assert p.get("status") == 200, p
        got = c.get_object(Bucket=allow, Key="put.txt")
        assert got["Body"].read() == b"put from the browser allow", got
        assert p.get("etag") == got["ETag"], (p, got["ETag"])
        f = res["allow_post"]
        assert f.get("status") == 204, f
        assert c.get_object(Bucket=allow, Key="posted.txt")["Body"].read() == \
            b"posted from the browser allow"
        # denied: the browser blocks every call
        for k in ("deny_get", "deny_put", "deny_post"):
            assert "blocked" in res[k] and "Failed to fetch" in res[k]["blocked"], (k, res[k])
        # the preflight failed, so the PUT itself was never sent
        expect_error(lambda: c.head_object(Bucket=deny, Key="put.txt"), "404", 404)
        # a form POST is a "simple" request: the browser sends it without a
        # preflight and only hides the answer from the script (CORS guards
        # reads, the POST policy guards the write)
        assert c.get_object(Bucket=deny, Key="posted.txt")["Body"].read() == \
            b"posted from the browser deny"
    finally:
        if driver is not None:
            driver.quit()
        if page is not None:
            page.close()


if __name__ == "__main__":
    run(Strata())
