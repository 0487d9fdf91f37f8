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
pages need an admin.  The object details panel shows what boto3's
head_object, get_object_tagging, get_object_retention and
get_object_legal_hold report (metadata, tags, storage class of a second
tier, GOVERNANCE retention, legal hold ON), also for an older version.  The
share action's presigned link (copied to the clipboard, read back from it)
downloads the bytes with plain urllib, carries the chosen expiry (1 hour, 7
days, a number of seconds) and is refused with 403 once expired or
tampered with.  Every page (login, buckets, objects, folders, an empty
bucket, details, share, versions, health with tiers and a finished heal,
users, the non-admin's messages) is screenshotted into the scratch
directory and its rendered text (document.body.innerText) holds no
leftover "null", "undefined", "NaN" or "[object ...]".  No credentials
ever appear in a URL the browser requested (Chrome's DevTools network log
is checked).  chromium and chromium-driver are
installed by deploy/install-deps.sh, so their absence fails the test.
"""

import datetime
import glob
import os
import re
import shutil
import time
import urllib.error
import urllib.parse
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
        self.shots = os.path.join(strata.tmp, "screenshots")
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

    def shot(self, name):
        """A screenshot of the page, kept in the scratch directory."""
        os.makedirs(self.shots, exist_ok=True)
        self.d.save_screenshot(os.path.join(self.shots, name + ".png"))

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


@test
def slow_page_does_not_draw_over_the_next(s):
    """With every request delayed, the health page (three round trips) is
    still loading when the user moves on to the bucket list (one): its late
    data must not replace the page the user is now on."""
    b = browser(s)
    b.d.get(b.base + "#/buckets")
    if b.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#buckets, #ak"))[0].get_attribute("id") == "ak":
        b.login(s.ak, s.sk)
    b.css("#buckets")
    b.d.execute_cdp_cmd("Network.enable", {})
    b.d.execute_cdp_cmd("Network.emulateNetworkConditions", {
        "offline": False, "latency": 400, "downloadThroughput": -1, "uploadThroughput": -1})
    try:
        b.d.execute_script("location.hash = '#/health'")
        time.sleep(0.1)
        b.d.execute_script("location.hash = '#/buckets'")
        # The health view would have drawn by 3 round trips (1.2 s); wait past that.
        time.sleep(2.5)
        heading = b.d.find_element(By.CSS_SELECTOR, "main h2").text
        assert heading == "Buckets", (heading, b.d.find_element(By.TAG_NAME, "body").text[:400])
        assert b.d.find_elements(By.CSS_SELECTOR, "#buckets"), "bucket table gone"
        assert not b.d.find_elements(By.CSS_SELECTOR, "#drives"), "the health page drew over the bucket list"
    finally:
        b.d.execute_cdp_cmd("Network.emulateNetworkConditions", {
            "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})


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


def dd(b, id_):
    return b.d.find_element(By.ID, id_).text


def items(b, id_):
    return [e.text for e in b.d.find_elements(By.CSS_SELECTOR, f"#{id_} li")]


def open_details(b, bucket, key):
    b.d.get(b.base + "#/b/" + bucket + "/")
    b.css(f'tr.object[data-key="{key}"] button.details').click()
    b.text_in("#details-box h3", "Details of " + key)


@test
def object_details_match_s3(s):
    c = s.client()
    bucket = s.bucket_name("console-details")
    c.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=True)
    data = os.urandom(2000)
    until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=2)).replace(microsecond=0)
    old = c.put_object(Bucket=bucket, Key="doc.bin", Body=b"first version")["VersionId"]
    c.put_object(Bucket=bucket, Key="doc.bin", Body=data, StorageClass="STANDARD_IA",
                 ContentType="application/x-report",
                 Metadata={"owner": "ann", "project": "apollo 11"}, Tagging="team=red&tier=gold",
                 ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until,
                 ObjectLockLegalHoldStatus="ON")
    head = c.head_object(Bucket=bucket, Key="doc.bin")
    tags = c.get_object_tagging(Bucket=bucket, Key="doc.bin")["TagSet"]
    ret = c.get_object_retention(Bucket=bucket, Key="doc.bin")["Retention"]
    hold = c.get_object_legal_hold(Bucket=bucket, Key="doc.bin")["LegalHold"]["Status"]
    assert head["StorageClass"] == "STANDARD_IA" and hold == "ON", (head, hold)  # the data is real
    b = browser(s)
    open_details(b, bucket, "doc.bin")
    b.shot("details-lock")
    assert dd(b, "d-size") == f"{head['ContentLength']} bytes (2.0 KiB)", dd(b, "d-size")
    assert dd(b, "d-etag") == head["ETag"].strip('"'), (dd(b, "d-etag"), head["ETag"])
    assert dd(b, "d-class") == head["StorageClass"], dd(b, "d-class")
    assert dd(b, "d-version") == head["VersionId"], (dd(b, "d-version"), head["VersionId"])
    assert dd(b, "d-ctype") == head["ContentType"], dd(b, "d-ctype")
    assert items(b, "d-meta") == [f"{k}: {v}" for k, v in sorted(head["Metadata"].items())], \
        (items(b, "d-meta"), head["Metadata"])
    assert items(b, "d-tags") == [f"{t['Key']}: {t['Value']}" for t in tags], (items(b, "d-tags"), tags)
    mode, _, shown_until = dd(b, "d-retention").partition(" until ")
    assert mode == ret["Mode"] == "GOVERNANCE", (dd(b, "d-retention"), ret)
    assert datetime.datetime.fromisoformat(shown_until.replace("Z", "+00:00")) == ret["RetainUntilDate"] \
        == until, (shown_until, ret)
    assert dd(b, "d-hold") == hold, dd(b, "d-hold")
    # The older version, from the versions table: its own id and size.
    b.d.find_element(By.CSS_SELECTOR, 'tr.object[data-key="doc.bin"] button.versions').click()
    b.css(f'tr.version[data-version="{old}"] button.details').click()
    b.text_in("#details-box h3", f"(version {old})")
    ohead = c.head_object(Bucket=bucket, Key="doc.bin", VersionId=old)
    assert dd(b, "d-version") == old and dd(b, "d-size") == f"{ohead['ContentLength']} bytes", \
        (dd(b, "d-version"), dd(b, "d-size"))
    assert dd(b, "d-class") == ohead.get("StorageClass", "STANDARD") == "STANDARD"
    assert dd(b, "d-meta") == dd(b, "d-tags") == "none"
    assert dd(b, "d-retention") == "none" and dd(b, "d-hold") == "none"  # 404 from S3 for both
    # A plain bucket: no version id, no Object Lock.
    c2, plain = s.client(), s.bucket_name("console-plain")
    c2.create_bucket(Bucket=plain)
    c2.put_object(Bucket=plain, Key="p.txt", Body=b"plain")
    assert "VersionId" not in c2.head_object(Bucket=plain, Key="p.txt")
    open_details(b, plain, "p.txt")
    b.shot("details-plain")
    assert dd(b, "d-version") == "none (bucket not versioned)"
    assert dd(b, "d-retention") == dd(b, "d-hold") == "not an Object Lock bucket"
    assert dd(b, "d-size") == "5 bytes"


def share_link(b, choice, seconds=None, attachment=True):
    """Makes a link in the open share form; returns (URL, note text)."""
    from selenium.webdriver.support.ui import Select
    before = b.d.find_element(By.ID, "share-url").get_attribute("value")
    Select(b.d.find_element(By.ID, "share-expiry")).select_by_visible_text(choice)
    if seconds is not None:
        box = b.css("#share-seconds")
        box.clear()
        box.send_keys(str(seconds))
    cb = b.d.find_element(By.ID, "share-attachment")
    if cb.is_selected() != attachment:
        cb.click()
    b.d.find_element(By.ID, "share-make").click()
    b.wait(lambda d: d.find_element(By.ID, "share-url").get_attribute("value") not in ("", before))
    return b.d.find_element(By.ID, "share-url").get_attribute("value"), b.d.find_element(By.ID, "share-note").text


def clipboard(b):
    return b.d.execute_async_script(
        "const done = arguments[0]; navigator.clipboard.readText().then(done, (e) => done('ERROR ' + e));")


def s3_code(body):
    m = re.search(rb"<Code>([^<]*)</Code>", body)
    return m and m.group(1).decode()


@test
def share_link_downloads_the_object(s):
    c, bucket = s.client(), s.bucket_name("console-share")
    c.create_bucket(Bucket=bucket)
    data = os.urandom(50000)
    c.put_object(Bucket=bucket, Key="dir/report 1.bin", Body=data)
    c.put_object(Bucket=bucket, Key="dir/other.bin", Body=b"other")
    b = browser(s)
    b.d.execute_cdp_cmd("Browser.grantPermissions", {
        "origin": s.endpoint, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    b.d.get(b.base + "#/b/" + bucket + "/dir%2F")
    b.css('tr.object[data-key="dir/report 1.bin"] button.share').click()
    b.text_in("#share-box h3", "Share dir/report 1.bin")
    t0 = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    url, note = share_link(b, "1 hour")
    b.shot("share")
    assert clipboard(b) == url, (clipboard(b), url)
    assert note.startswith("Copied to the clipboard. Anyone with it can download dir/report 1.bin until "), note
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    assert q["X-Amz-Expires"] == ["3600"], q
    signed = datetime.datetime.strptime(q["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    assert abs((signed - t0).total_seconds()) < 60, (signed, t0)
    assert q["X-Amz-Credential"][0].startswith(s.ak + "/") and s.sk not in url, url
    assert url.startswith(s.endpoint + "/" + bucket + "/dir/report%201.bin?"), url
    # The note's "until" is the link's end.
    shown = datetime.datetime.fromisoformat(note.rsplit(" until ", 1)[1].rstrip(".").replace("Z", "+00:00"))
    assert abs((shown - (signed + datetime.timedelta(seconds=3600))).total_seconds()) <= 2, (shown, signed)
    st, h, body = fetch(url)  # no credentials: the link alone
    assert st == 200 and body == data, (st, body[:200])
    h = {k.lower(): v for k, v in h.items()}
    assert h.get("content-disposition") == "attachment; filename*=UTF-8''report%201.bin", h
    # 7 days, inline (no Content-Disposition).
    url7, _ = share_link(b, "7 days", attachment=False)
    q7 = urllib.parse.parse_qs(urllib.parse.urlsplit(url7).query)
    assert q7["X-Amz-Expires"] == ["604800"] and "response-content-disposition" not in q7, q7
    st, h, body = fetch(url7)
    assert st == 200 and body == data and "content-disposition" not in map(str.lower, h), (st, h)
    assert clipboard(b) == url7
    # Tampered: another signature, a longer expiry, another key: 403.
    sig = q["X-Amz-Signature"][0]
    bad_sig = url.replace(sig, ("0" if sig[0] != "0" else "1") + sig[1:])
    for bad, code in ((bad_sig, "SignatureDoesNotMatch"),
                      (url.replace("X-Amz-Expires=3600", "X-Amz-Expires=7200"), "SignatureDoesNotMatch"),
                      (url.replace("/dir/report%201.bin?", "/dir/other.bin?"), "SignatureDoesNotMatch")):
        st, _, body = fetch(bad)
        assert st == 403 and s3_code(body) == code, (bad, st, body)
    # More than a week is refused by the form; nothing new is made.
    from selenium.webdriver.support.ui import Select
    Select(b.d.find_element(By.ID, "share-expiry")).select_by_visible_text("other (seconds)")
    box = b.css("#share-seconds")
    box.clear()
    box.send_keys("604801")
    b.d.find_element(By.ID, "share-make").click()
    time.sleep(0.5)
    assert b.d.find_element(By.ID, "share-url").get_attribute("value") == url7
    # A 2-second link works at once, then expires.
    url2, _ = share_link(b, "other (seconds)", seconds=2)
    q2 = urllib.parse.parse_qs(urllib.parse.urlsplit(url2).query)
    assert q2["X-Amz-Expires"] == ["2"], q2
    signed2 = datetime.datetime.strptime(q2["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    st, _, body = fetch(url2)
    if (datetime.datetime.now(datetime.timezone.utc) - signed2).total_seconds() < 2:
        assert st == 200 and body == data, (st, body[:200])
    while (datetime.datetime.now(datetime.timezone.utc) - signed2).total_seconds() < 3.5:
        time.sleep(0.2)
    st, _, body = fetch(url2)
    assert st == 403 and s3_code(body) == "AccessDenied" and b"expired" in body, (st, body)


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


# A leftover of rendering code: "null", "undefined" or "NaN" as a word of
# its own or glued together ("nullnull"), or an object's default string.
LEFTOVER = re.compile(r"\[object [A-Za-z]*\]?|(?<![A-Za-z])(?:null|undefined|NaN)+(?![A-Za-z])")


LEFTOVERS = []  # (page, text around it) found by check_page()


def check_page(b, name, ready, allowed=()):
    """Waits for the CSS selector ready, takes a screenshot and notes any
    leftover in the page's rendered text in LEFTOVERS (the walk goes on, so
    one run names every bad page).  allowed: (selector, text) of elements
    whose value legitimately is such a word (S3's "null" version id); each
    must be there with exactly that text, and only its own text is let
    off.  Returns the text."""
    b.css(ready)
    time.sleep(0.3)  # the page's last parts (settings, charts) settle
    b.shot(name)
    for sel, want in allowed:
        got = [e.text for e in b.d.find_elements(By.CSS_SELECTOR, sel)]
        assert got == [want], (name, sel, got)
    # The text with the allowed elements blanked for the moment of reading.
    text = b.d.execute_script("""
        const saved = arguments[0].flatMap((sel) => Array.from(document.querySelectorAll(sel)))
          .map((e) => [e, e.textContent]);
        for (const [e] of saved) e.textContent = "";
        const text = document.body.innerText;
        for (const [e, t] of saved) e.textContent = t;
        return text;""", [sel for sel, _ in allowed])
    LEFTOVERS.extend((name, text[max(0, m.start() - 40):m.end() + 40]) for m in LEFTOVER.finditer(text))
    return text


def test_leftover_pattern():
    for t in ("x null", "Tiers\nnullnull\n", "[object HTMLUListElement]", "NaN B", "undefined"):
        assert LEFTOVER.search(t), t
    for t in ("nullable", "annulled", "Unknown access key", "undefinedness", "banana"):
        assert not LEFTOVER.search(t), t


@test
def every_page_renders_without_leftovers(s):
    test_leftover_pattern()
    c = s.client()
    b = browser(s)
    b.d.get(b.base)
    b.css("#ak, #nav:not([hidden]) #logout")
    if b.d.find_elements(By.CSS_SELECTOR, "#nav:not([hidden])"):
        b.logout()
    b.login(*USER)
    b.css("#bucket-name")
    b.d.get(b.base + "#/health")
    check_page(b, "health-non-admin", "#health-error")
    b.d.get(b.base + "#/users")
    check_page(b, "users-non-admin", "#users-error")
    b.logout()
    check_page(b, "login", "#login")
    b.login(s.ak, s.sk + "x")
    b.text_in("#login-error", "Wrong secret")
    check_page(b, "login-error", "#login-error")
    empty = s.bucket_name("console-empty")
    c.create_bucket(Bucket=empty)
    walk = s.bucket_name("console-walk")
    c.create_bucket(Bucket=walk)
    c.put_object(Bucket=walk, Key="top.txt", Body=b"top")
    c.put_object(Bucket=walk, Key="a/b/deep.txt", Body=b"deep")
    vers = s.bucket_name("console-vers")
    c.create_bucket(Bucket=vers)
    c.put_bucket_versioning(Bucket=vers, VersioningConfiguration={"Status": "Enabled"})
    c.put_object(Bucket=vers, Key="w.txt", Body=b"one")
    c.put_object(Bucket=vers, Key="w.txt", Body=b"two")
    b.login(s.ak, s.sk)  # lands on the bucket list
    check_page(b, "buckets", f'tr[data-bucket="{walk}"]')
    b.d.get(b.base + "#/b/" + empty + "/")
    check_page(b, "bucket-empty", "#empty")
    b.d.get(b.base + "#/b/" + walk + "/")
    check_page(b, "objects", "#set-lifecycle")
    b.css('tr.folder[data-prefix="a/"] a').click()
    b.css('tr.folder[data-prefix="a/b/"] a').click()
    check_page(b, "folder", 'tr.object[data-key="a/b/deep.txt"]')
    # Unversioned object: S3 lists its one version with the id "null".
    b.d.get(b.base + "#/b/" + walk + "/")
    b.css('tr.object[data-key="top.txt"] button.versions').click()
    listed = c.list_object_versions(Bucket=walk, Prefix="top.txt")["Versions"]
    assert [v["VersionId"] for v in listed] == ["null"], listed
    check_page(b, "versions-unversioned", "#versions",
                 allowed=[('#versions tr[data-version="null"] td:first-child', "null")])
    b.d.find_element(By.CSS_SELECTOR, 'tr.object[data-key="top.txt"] button.details').click()
    b.d.find_element(By.CSS_SELECTOR, 'tr.object[data-key="top.txt"] button.share').click()
    b.d.find_element(By.ID, "share-make").click()
    b.text_in("#share-note", "until")
    check_page(b, "details-share", "#d-hold", allowed=[('#versions tr[data-version="null"] td:first-child', "null")])
    b.d.get(b.base + "#/b/" + vers + "/")
    b.css('tr.object[data-key="w.txt"] button.versions').click()
    check_page(b, "versions", "#versions tr.version")
    # Health with the tiers and a finished heal run.
    b.d.get(b.base + "#/health")
    before = b.css("#heal-state")
    b.css("#heal-start").click()
    # The click re-renders the page: let it finish before going elsewhere.
    b.wait(EC.staleness_of(before))
    b.css("#heal-state")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and s.admin_get("heal/status")[1].get("state") != "idle":
        time.sleep(0.5)
    b.d.get(b.base + "#/buckets")
    b.css("#bucket-name")
    b.d.get(b.base + "#/health")
    b.text_in("#heal-state", "last run ok")
    text = check_page(b, "health", "#ilm-state")
    assert "Drives" in text and "Heal" in text
    b.d.get(b.base + "#/users")
    check_page(b, "users", f'tr.user[data-user="{USER[0]}"]')
    log(f"screenshots in {b.shots}")
    assert not LEFTOVERS, "leftover text on the pages:\n" + "\n".join(f"{p}: {t!r}" for p, t in LEFTOVERS)
    # The tiers (shown as "[object ...]" once): one line per tier.
    b.d.get(b.base + "#/health")
    b.css("#tiers")
    assert items(b, "tiers") == ["hot: STANDARD; 1 set, 4/4 drives online",
                                 "warm: STANDARD_IA, WARM; 1 set, 4/4 drives online"], items(b, "tiers")


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
    # A second tier, so an object's storage class can be other than STANDARD.
    warm = tempfile.mkdtemp(prefix="console-warm.", dir=base)
    warm_drives = [os.path.join(warm, f"w{i}") for i in range(1, 5)]
    for d in warm_drives:
        os.makedirs(d)
    strata = Strata(args=["--users", users, "--tier", "warm:2+2:" + ",".join(warm_drives)])
    try:
        rc = run(strata)
    finally:
        if BROWSER:
            BROWSER.quit()
        os.unlink(users)
        shutil.rmtree(warm, ignore_errors=True)
    log("done")
