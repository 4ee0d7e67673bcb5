"""The browser console in headless Chromium (Debian's chromium and chromedriver) via Selenium:
run by cli/tests/ws_console.rs.

usage: console.py RPCWIRE_BINARY
Starts `rpcwire serve --ws 127.0.0.1:PORT --console --tick 300` itself (so that it can stop it
and start it again on the same port). Prints one `ok: ...` line per check.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

BIN = sys.argv[1]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    PORT = s.getsockname()[1]


def start():
    server = subprocess.Popen(
        [BIN, "serve", "--ws", f"127.0.0.1:{PORT}", "--console", "--tick", "300"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    line = server.stderr.readline().decode()
    assert "serving" in line, line
    return server


def status(d):
    return d.find_element(By.ID, "status").text


def log_text(d):
    return d.find_element(By.ID, "log").text


def call_subtract(d, wait):
    d.find_element(By.CSS_SELECTOR, '#methods button[data-method="subtract"]').click()
    params = d.find_element(By.ID, "params")
    params.clear()
    params.send_keys("[42, 23]")
    d.execute_script("document.getElementById('result').textContent = ''")
    d.find_element(By.ID, "call").click()
    wait.until(lambda d: d.find_element(By.ID, "result").text.strip() == "19")


tmp = tempfile.mkdtemp(prefix="rpcwire-chromium-")
os.environ.update(TMPDIR=tmp, SE_OFFLINE="true", SE_AVOID_STATS="true")
server = start()
driver = None
try:
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
              "--disable-component-update", f"--user-data-dir={tmp}/profile"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=opts)
    wait = WebDriverWait(driver, 10)

    driver.get(f"http://127.0.0.1:{PORT}/")
    wait.until(lambda d: status(d) == "connected")
    assert driver.title == "rpcwire console", driver.title
    print("ok: the page loads and connects")

    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#methods button.method"))
    methods = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#methods button.method")]
    for m in ("subtract", "sum", "get_data", "broadcast", "ask"):
        assert m in methods, methods
    print(f"ok: it lists the {len(methods)} methods from rpc.discover")

    call_subtract(driver, wait)
    assert '"method":"subtract","id"' in log_text(driver) and '"result":19' in log_text(driver)
    print("ok: calling subtract [42, 23] shows 19, request and response in the log")

    wait.until(lambda d: any('"method":"tick"' in e.text
                             for e in d.find_elements(By.CSS_SELECTOR, "#log .note")))
    print("ok: a pushed notification is shown")

    server.kill()
    server.wait()
    wait.until(lambda d: status(d).startswith("disconnected"))
    assert "connection lost" in log_text(driver)
    print("ok: stopping the server shows the disconnect message")

    server = start()
    WebDriverWait(driver, 20).until(lambda d: status(d) == "connected")
    wait.until(lambda d: "connection restored" in log_text(d))
    call_subtract(driver, wait)
    print("ok: when the server returns the page reconnects and calls work again")
finally:
    if driver is not None:
        driver.quit()
    server.kill()
    server.wait()
    shutil.rmtree(tmp, ignore_errors=True)
