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


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_other(*args):
    """`rpcwire serve ARGS...` once it says it serves."""
    other = subprocess.Popen([BIN, "serve", *args], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    line = other.stderr.readline().decode()
    assert "serving" in line, line
    return other


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


# 3 s of calls, 8 in flight at a time, every tenth one failing (Invalid params).
BURST_WS = """
    const ws = new WebSocket('ws://' + location.host + '/');
    let id = 0;
    const until = Date.now() + 3000;
    function next() {
        if (Date.now() > until) { ws.close(); return; }
        id += 1;
        const bad = id % 10 === 0;
        ws.send(JSON.stringify({jsonrpc: '2.0', id: id,
            method: 'subtract', params: bad ? ['x'] : [42, id]}));
    }
    ws.onopen = () => { for (let i = 0; i < 8; i++) next(); };
    ws.onmessage = next;
"""

# The same over HTTP POSTs to arguments[0] (the server's JSON-RPC path).
BURST_HTTP = """
    const path = arguments[0];
    let id = 0;
    const until = Date.now() + 3000;
    async function worker() {
        while (Date.now() < until) {
            id += 1;
            const bad = id % 10 === 0;
            await fetch(path, {method: 'POST', headers: {'Content-Type': 'application/json'},
                body: JSON.stringify({jsonrpc: '2.0', id: id, method: 'subtract',
                                      params: bad ? ['x'] : [42, id]})});
        }
    }
    for (let i = 0; i < 8; i++) worker();
"""

# The live view's numbers, read in one script: the table is redrawn on every poll.
READ_LIVE = """
    const text = (sel) => { const e = document.querySelector(sel); return e ? e.textContent : null; };
    const row = '#live-methods tr[data-method="subtract"] ';
    return {rate: text(row + 'td.rate'), p50: text(row + 'td.p50'), p99: text(row + 'td.p99'),
            total: text('#live-rate'), errors: text('#live-errors'),
            method: text('#live-method'), p95: text('#live-p95'),
            conns: text('#live-connections')};
"""


def check_live(d):
    """Waits for the live view to show subtract's rate, percentiles and errors while a burst
    runs, and checks that the charts are drawn; returns what it saw."""
    def busy(d):
        v = d.execute_script(READ_LIVE)
        if v["rate"] is None or float(v["rate"]) <= 0 or float(v["total"]) <= 0:
            return False
        if int(v["errors"]) <= 0 or v["p50"] in (None, "-") or v["method"] != "subtract":
            return False
        return v
    v = WebDriverWait(d, 10).until(busy)
    rate, p50, p99, conns = float(v["rate"]), v["p50"], v["p99"], int(v["conns"])
    assert p50.split()[1] in ("µs", "ms", "s") and float(p50.split()[0]) > 0, p50
    assert p99 != "-" and v["p95"] != "-", v
    assert conns >= 1, v
    # The charts are drawn: points plotted and pixels other than the background.
    for chart in ("chart-rate", "chart-latency", "chart-connections"):
        drawn = d.execute_script("""
            const c = document.getElementById(arguments[0]);
            const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let inked = 0;
            for (let i = 3; i < px.length; i += 4) if (px[i] > 0) inked++;
            return [Number(c.dataset.points || 0), inked];
        """, chart)
        assert drawn[0] > 0 and drawn[1] > 100, (chart, drawn)
    return (f"subtract at {rate} calls/s, p50 {p50}, p99 {p99}, {conns} connection(s), "
            "charts drawn")


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

    # The live view: a burst of calls from a second WebSocket of the page's (3 s of 8 calls in
    # flight at a time, subtract and a failing call) shows a rate, percentiles and errors.
    driver.execute_script(BURST_WS)
    print("ok: live view after a burst: " + check_live(driver))

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

    # The HTTP server's console: the page on /console, its WebSocket on the JSON-RPC path.
    http_port = free_port()
    http_server = start_other("--http", f"127.0.0.1:{http_port}", "--console")
    try:
        driver.get(f"http://127.0.0.1:{http_port}/console")
        wait.until(lambda d: status(d) == "connected")
        assert driver.find_element(By.ID, "url").text == f"ws://127.0.0.1:{http_port}/rpc"
        driver.execute_script(BURST_HTTP, "/rpc")
        print("ok: over HTTP, the console on /console shows the live view: " + check_live(driver))
    finally:
        http_server.kill()
        http_server.wait()

    # Servers that ask for a token (`--tokens`): the page sends it as a subprotocol.
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write("console-s3cret @operator admin\n")
    auth_port = free_port()
    auth_server = start_other("--ws", f"127.0.0.1:{auth_port}", "--console", "--tokens", tokens)
    try:
        driver.execute_script("sessionStorage.clear()")
        driver.get(f"http://127.0.0.1:{auth_port}/")
        wait.until(lambda d: "enter it above" in log_text(d))
        assert status(driver) != "connected", status(driver)
        token = driver.find_element(By.ID, "token")
        token.send_keys("wrong-token")
        driver.execute_script("arguments[0].dispatchEvent(new Event('change'))", token)
        wait.until(lambda d: log_text(d).count("connection lost") >= 2)
        assert status(driver) != "connected", status(driver)
        token.clear()
        token.send_keys("console-s3cret")
        driver.execute_script("arguments[0].dispatchEvent(new Event('change'))", token)
        wait.until(lambda d: status(d) == "connected")
        driver.find_element(By.ID, "method").clear()
        driver.find_element(By.ID, "method").send_keys("whoami")
        driver.find_element(By.ID, "params").clear()
        driver.execute_script("document.getElementById('result').textContent = ''")
        driver.find_element(By.ID, "call").click()
        wait.until(lambda d: '"operator"' in d.find_element(By.ID, "result").text)
        assert '"authenticated": true' in driver.find_element(By.ID, "result").text.replace('":true', '": true')
        print("ok: with --tokens the page is refused until its token is entered, then connects "
              "as the token's subject")
    finally:
        auth_server.kill()
        auth_server.wait()

    auth_http_port = free_port()
    auth_http = start_other("--http", f"127.0.0.1:{auth_http_port}", "--console",
                            "--tokens", tokens)
    try:
        driver.execute_script("sessionStorage.clear()")
        driver.get(f"http://127.0.0.1:{auth_http_port}/console#token=console-s3cret")
        wait.until(lambda d: status(d) == "connected")
        assert "#" not in driver.current_url and "s3cret" not in driver.current_url, \
            driver.current_url
        call_subtract(driver, wait)
        print("ok: over HTTP with --tokens, a #token= fragment connects the console (and "
              "leaves the address bar)")
    finally:
        auth_http.kill()
        auth_http.wait()
finally:
    if driver is not None:
        driver.quit()
    server.kill()
    server.wait()
    shutil.rmtree(tmp, ignore_errors=True)
