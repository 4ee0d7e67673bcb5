"""Headless Chromium (Debian's chromium and chromedriver, driven by Selenium) opens PAGE_URL,
whose script calls a JSON-RPC server on another origin with fetch(); prints the page's title
once the script has set it ("result:N" or "error:..."). Run by transports/http/tests/axum_tls.rs.

usage: cors.py PAGE_URL
"""
import os
import sys
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

os.environ.setdefault("SE_OFFLINE", "true")
os.environ.setdefault("SE_AVOID_STATS", "true")
with tempfile.TemporaryDirectory() as profile:
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-component-update", "--ignore-certificate-errors",
                f"--user-data-dir={profile}"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"),
                              options=opts)
    try:
        driver.get(sys.argv[1])
        WebDriverWait(driver, 20).until(lambda d: d.title.startswith(("result:", "error:")))
        print(driver.title)
    finally:
        driver.quit()
