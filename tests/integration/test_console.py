"""test_console.py - the web console at /strata/console/ in a real browser:
Debian's chromium, headless, driven by python3-selenium through
chromium-driver.

Checks: the static files' Content-Type and Content-Security-Policy (and
no inline script the CSP would block); logging in with the root keys;
creating a bucket; uploading a file through the file input (progress bar
full); seeing it listed; downloading it into a download directory set by
Chrome prefs and comparing the bytes; its versions and the bucket's
settings; deleting it (gone from the list and from S3); a wrong secret and
an unknown access key each get a clear message; the health page lists
every drive; the users page adds, disables, enables and removes a user
(checked through S3 with that user's keys); a non-admin is told both
pages need an admin.  No credentials ever appear in a URL the browser requested
(Chrome's DevTools network log is checked).  chromium and chromium-driver are
installed by deploy/install-deps.sh, so their absence fails the test.
"""

import glob
import os
import re
import shutil
import time
import urllib.error
import urllib.request

from strata_harness import Strata, log, run, test

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
for _p in (CHROMIUM, DRIVER):
    if not os.access(_p, os.X_OK):
        raise SystemExit(f"FAIL: {_p} missing: run deploy/install-deps.sh "
                         "(chromium chromium-driver python3-selenium)")
try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError as e:
    raise SystemExit(f"FAIL: python3-selenium missing ({e}): run deploy/install-deps.sh")

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch(url):
    try:
        with OPENER.open(url, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


class Browser:
    def __init__(self, strata):
        self.dl = os.path.join(strata.tmp, "downloads")
        os.makedirs(self.dl)
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--no-first-run", "--no-proxy-server", "--window-size=1280,1000",
                  f"--user-data-dir={os.path.join(strata.tmp, 'chrome-profile')}"):
            opts.add_argument(a)
        opts.add_experimental_option("prefs", {
            "download.default_directory": self.dl,
            "download.prompt_for_download": False,
            "download.directory_upgrade": True,
            "safebrowsing.enabled": False,
        })
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        self.d = webdriver.Chrome(service=Service(DRIVER, log_output=os.path.join(strata.tmp, "chromedriver.log")),
                                  options=opts)
        self.d.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": self.dl})
        self.base = strata.endpoint + "/strata/console/"
        self.urls = []
        self.logs = []

    def wait(self, cond, timeout=20):
        return WebDriverWait(self.d, timeout).until(cond)

    def css(self, sel, timeout=20):
        return self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, sel)), timeout)

    def text_in(self, sel, text, timeout=20):
        try:
            return self.wait(EC.text_to_be_present_in_element((By.CSS_SELECTOR, sel), text), timeout)
        except TimeoutException:
            raise AssertionError(f"{sel!r} never showed {text!r}; page says: "
                                 f"{self.d.find_element(By.TAG_NAME, 'body').text[:800]!r}; "
                                 f"console: {self.console_log()}")

    def requested_urls(self):
        """Every URL the page requested since the last call (DevTools log)."""
        import json
        urls = []
        for e in self.d.get_log("performance"):
            m = json.loads(e["message"])["message"]
            if m.get("method") == "Network.requestWillBeSent":
                urls.append(m["params"]["request"]["url"])
        self.urls.extend(urls)
        return self.urls

    def console_log_all(self):
        self.logs.extend(e["message"] for e in self.d.get_log("browser"))
        return self.logs

    def console_log(self):
        try:
            return self.console_log_all()[-10:]
        except Exception:
            return []

    def login(self, ak, sk):
        self.d.get(self.base)
        self.css("#ak").clear()
        self.d.find_element(By.ID, "ak").send_keys(ak)
        self.d.find_element(By.ID, "sk").clear()
        self.d.find_element(By.ID, "sk").send_keys(sk)
        self.d.find_element(By.ID, "login-btn").click()

    def logout(self):
        self.d.find_element(By.ID, "logout").click()
        self.css("#ak")

    def quit(self):
        self.d.quit()


BROWSER = None


def browser(s):
    global BROWSER
    if BROWSER is None:
        BROWSER = Browser(s)
    return BROWSER


@test
def static_files_headers(s):
    st, h, body = fetch(s.endpoint + "/strata/console/")
    assert st == 200 and h["Content-Type"] == "text/html; charset=utf-8", (st, h)
    csp = h["Content-Security-Policy"]
    for d in ("default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"):
        assert d in csp, csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, csp
    assert h["X-Content-Type-Options"] == "nosniff"
    html = body.decode()
    # Every script is a file: an inline one would be blocked by the CSP.
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), html
    assert "style=" not in html
    for name, ctype in (("app.js", "text/javascript; charset=utf-8"),
                        ("sigv4.js", "text/javascript; charset=utf-8"),
                        ("style.css", "text/css; charset=utf-8"),
                        ("index.html", "text/html; charset=utf-8")):
        st, h, body = fetch(s.endpoint + "/strata/console/" + name)
        assert st == 200 and h["Content-Type"] == ctype and body, (name, st, h)
    st, h, _ = fetch(s.endpoint + "/strata/console/../../etc/passwd")
    assert st == 404, st
    st, h, _ = fetch(s.endpoint + "/strata/console/nope.js")
    assert st == 404 and "Content-Security-Policy" in h, (st, h)
    req = urllib.request.Request(s.endpoint + "/strata/console", method="HEAD")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None
    op = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect)
    try:
        op.open(req, timeout=10)
        raise AssertionError("/strata/console did not redirect")
    except urllib.error.HTTPError as e:
        assert e.code == 301 and e.headers["Location"] == "/strata/console/", (e.code, dict(e.headers))


@test
def wrong_secret_and_unknown_key_are_explained(s):
    b = browser(s)
    b.login(s.ak, s.sk + "x")
    b.text_in("#login-error", f"Wrong secret key for access key {s.ak}.")
    assert b.d.find_element(By.ID, "nav").get_attribute("hidden") is not None
    b.login("NOSUCHKEY123", "whatever")
    b.text_in("#login-error", "Unknown access key NOSUCHKEY123.")


@test
def bucket_upload_download_delete(s):
    b = browser(s)
    b.login(s.ak, s.sk)
    b.css("#bucket-name").send_keys(bucket := s.bucket_name("console"))
    b.d.find_element(By.ID, "create-bucket").click()
    link = b.css(f'tr[data-bucket="{bucket}"] a')
    s.client().head_bucket(Bucket=bucket)  # exists in S3 too
    link.click()
    b.css("#upload-input")
    data = os.urandom(3 * 1024 * 1024 + 17)
    src = os.path.join(s.tmp, "payload.bin")
    with open(src, "wb") as f:
        f.write(data)
    b.d.find_element(By.ID, "upload-input").send_keys(src)
    b.d.find_element(By.ID, "upload-btn").click()
    row = b.css('tr.object[data-key="payload.bin"]', 60)
    bar = b.d.find_element(By.ID, "upload-progress")
    assert bar.get_attribute("value") == bar.get_attribute("max") == str(len(data)), \
        (bar.get_attribute("value"), bar.get_attribute("max"))
    assert "3.0 MiB" in row.text, row.text
    got = s.client().get_object(Bucket=bucket, Key="payload.bin")["Body"].read()
    assert got == data, "uploaded bytes differ"
    # Settings of a fresh bucket.
    b.text_in("#set-versioning", "never enabled")
    b.text_in("#set-lock", "off")
    b.text_in("#set-lifecycle", "no rules")
    # Download through the browser and compare.
    row.find_element(By.CSS_SELECTOR, "button.download").click()
    target = os.path.join(b.dl, "payload.bin")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if os.path.exists(target) and not glob.glob(os.path.join(b.dl, "*.crdownload")) \
                and os.path.getsize(target) == len(data):
            break
        time.sleep(0.2)
    assert os.path.exists(target), f"no download in {b.dl}: {os.listdir(b.dl)}; {b.console_log()}"
    with open(target, "rb") as f:
        assert f.read() == data, "downloaded bytes differ"
    # Versions (unversioned bucket: the one "null" version).
    row.find_element(By.CSS_SELECTOR, "button.versions").click()
    b.text_in("#versions", "null")
    # Delete: the button asks again, then the object is gone.
    b.d.find_element(By.CSS_SELECTOR, 'tr.object[data-key="payload.bin"] button.delete').click()
    b.d.find_element(By.CSS_SELECTOR, 'tr.object[data-key="payload.bin"] button.delete').click()
    b.css("#empty")
    assert not b.d.find_elements(By.CSS_SELECTOR, 'tr.object[data-key="payload.bin"]')
    assert s.client().list_objects_v2(Bucket=bucket).get("KeyCount") == 0


@test
def bucket_settings_shown(s):
    c = s.client()
    bucket = s.bucket_name("console-lock")
    c.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=True)
    c.put_object_lock_configuration(Bucket=bucket, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 3}}})
    c.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [
        {"ID": "old-logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
         "Expiration": {"Days": 30}}]})
    c.put_object(Bucket=bucket, Key="dir/a.txt", Body=b"a")
    b = browser(s)
    b.d.get(b.base + "#/b/" + bucket + "/")
    b.text_in("#set-versioning", "Enabled")
    b.text_in("#set-lock", "enabled, default GOVERNANCE 3 days")
    b.text_in("#set-lifecycle", "old-logs, Enabled, expire after 30 days")
    # A prefix is a folder row; opening it lists the object inside.
    b.css('tr.folder[data-prefix="dir/"] a').click()
    b.css('tr.object[data-key="dir/a.txt"]')


@test
def health_page_shows_drives(s):
    b = browser(s)
    b.d.get(b.base + "#/health")
    b.css("#drives")
    rows = b.d.find_elements(By.CSS_SELECTOR, "#drives tr.drive")
    assert len(rows) == len(s.drives), [r.text for r in rows]
    for d in s.drives:
        assert any(d in r.text and "online" in r.text for r in rows), (d, [r.text for r in rows])
    b.text_in("#heal-state", "idle")
    b.css("#chart-requests")
    b.css("#chart-drives")


ADDED = ("CONSOLEADD01", "console-added-secret-01")


@test
def users_page_adds_disables_removes(s):
    from strata_harness import expect_error
    b = browser(s)
    b.d.get(b.base + "#/users")
    b.css(f'tr.user[data-user="{USER[0]}"]')
    b.css("#user-ak").send_keys(ADDED[0])
    b.d.find_element(By.ID, "user-sk").send_keys(ADDED[1])
    b.d.find_element(By.ID, "user-name").send_keys("Added In Console")
    b.d.find_element(By.ID, "add-user").click()
    row = f'tr.user[data-user="{ADDED[0]}"]'
    b.text_in(row, "Added In Console")
    b.text_in(row + " td.ustatus", "enabled")
    s.client(*ADDED).list_buckets()  # the new user works at once
    b.d.find_element(By.CSS_SELECTOR, row + " button.disable").click()
    b.text_in(row + " td.ustatus", "disabled")
    expect_error(lambda: s.client(*ADDED).list_buckets(), "InvalidAccessKeyId", 403)
    b.d.find_element(By.CSS_SELECTOR, row + " button.enable").click()
    b.text_in(row + " td.ustatus", "enabled")
    s.client(*ADDED).list_buckets()
    b.d.find_element(By.CSS_SELECTOR, row + " button.remove").click()
    b.d.find_element(By.CSS_SELECTOR, row + " button.remove").click()
    b.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, row))
    expect_error(lambda: s.client(*ADDED).list_buckets(), "InvalidAccessKeyId", 403)
    # The root user has no buttons.
    assert not b.d.find_elements(By.CSS_SELECTOR, f'tr.user[data-user="{s.ak}"] button')


@test
def non_admin_gets_a_clear_health_message(s):
    b = browser(s)
    b.logout()
    b.login(*USER)
    b.css("#bucket-name")
    b.d.get(b.base + "#/health")
    b.text_in("#health-error", "needs an admin user")
    b.d.get(b.base + "#/users")
    b.text_in("#users-error", "needs an admin user")


@test
def no_credentials_in_urls(s):
    urls = browser(s).requested_urls()
    assert any("/strata/admin/v1/info" in u for u in urls) and \
        any(u.endswith("/payload.bin") for u in urls), urls  # the log saw the calls
    for u in urls:
        for secret in (s.ak, s.sk, USER[1], ADDED[1], "X-Amz-Signature", "X-Amz-Credential"):
            assert secret not in u, f"credentials in a URL: {u}"


@test
def no_script_errors(s):
    """No CSP violation or uncaught exception in the page's console."""
    msgs = browser(s).console_log_all()
    # The log works: the settings' expected 404s (no lifecycle) are in it.
    assert any("404" in m for m in msgs), msgs
    bad = [m for m in msgs if "Content Security Policy" in m or "Uncaught" in m]
    assert not bad, bad


USER = ("CONSOLEUSER1", "console-user-one-secret")

if __name__ == "__main__":
    import tempfile
    base = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    users = os.path.join(base, f"console-users-{os.getpid()}")
    with open(users, "w") as f:
        f.write(f"{USER[0]} {USER[1]}\n")
    strata = Strata(args=["--users", users])
    try:
        rc = run(strata)
    finally:
        if BROWSER:
            BROWSER.quit()
        os.unlink(users)
    log("done")
