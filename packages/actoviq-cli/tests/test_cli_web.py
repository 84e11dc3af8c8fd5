"""``actoviq serve``: the token guard over real HTTP, and the page in headless Chromium.

The browser is Debian's ``chromium`` driven by Selenium through the system ``chromedriver``
(nothing is downloaded at test time); ``.ci/run`` installs both. Where they are missing the
browser test skips and says why. A screenshot of the page is kept in ``.artifacts/``.
"""

from __future__ import annotations

import http.client
import json
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_testkit import ARTIFACTS, Project, validated

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
BROWSER_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1200,900",
)


@dataclass(frozen=True)
class Served:
    url: str
    token: str
    host: str
    port: int


@pytest.fixture
def served(project: Project) -> Iterator[Served]:
    process = subprocess.Popen(
        project.command("--json", "serve", "payer", "--port", "0"),
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the process prints it once its socket listens
        assert line, process.stderr.read() if process.stderr else "serve exited"
        listening = validated(line)
        yield Served(listening["url"], listening["token"], listening["host"], listening["port"])
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C: a graceful shutdown
        try:
            _, errors = process.communicate(timeout=30)  # also closes the pipes
        except subprocess.TimeoutExpired:
            process.kill()
            _, errors = process.communicate(timeout=10)
    assert process.returncode == 0, errors


def _request(
    served: Served,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    body: str | None = None,
) -> tuple[int, dict[str, str], str]:
    connection = http.client.HTTPConnection(served.host, served.port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        text = response.read().decode("utf-8")
        return response.status, {k.lower(): v for k, v in response.getheaders()}, text
    finally:
        connection.close()


def _events(stream: str) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    for block in stream.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", list[str]()
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            events.append((name, json.loads("\n".join(data))))
    return events


def test_every_request_needs_the_token_and_forgery_is_refused(served: Served) -> None:
    bearer = {"Authorization": f"Bearer {served.token}"}
    for path in ("/", "/static/app.js", "/api/sessions", "/api/info", "/?token=wrong"):
        status, headers, _ = _request(served, "GET", path)
        assert status == 401, path
        assert headers["cache-control"] == "no-store"
    assert _request(served, "GET", "/api/info", headers={"Authorization": "Bearer nope"})[0] == 401
    status, _, body = _request(served, "GET", "/api/info", headers=bearer)
    assert status == 200 and json.loads(body)["agent"] == "payer"

    # The page: the token once in the URL, then an HttpOnly, SameSite=Strict cookie.
    status, headers, _ = _request(served, "GET", f"/?token={served.token}")
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"].split(";")[0]
    assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
    status, headers, page = _request(served, "GET", "/", headers={"Cookie": cookie})
    assert status == 200 and "script-src 'self'" in headers["content-security-policy"]
    assert "http://" not in page and "https://" not in page  # nothing from a CDN
    status, _, script = _request(served, "GET", "/static/app.js", headers={"Cookie": cookie})
    assert status == 200 and "Authorization" in script
    # A cookie alone never reaches the API (a cross-site page could make the browser send it).
    assert _request(served, "GET", "/api/sessions", headers={"Cookie": cookie})[0] == 401

    message = json.dumps({"text": "hi"})
    json_bearer = {**bearer, "Content-Type": "application/json"}
    path = "/api/sessions/s/messages"
    assert _request(served, "POST", path, headers=bearer, body=message)[0] == 415
    evil = {**json_bearer, "Origin": "http://evil.example"}
    assert _request(served, "POST", path, headers=evil, body=message)[0] == 403
    cross = {**json_bearer, "Sec-Fetch-Site": "cross-site"}
    assert _request(served, "POST", path, headers=cross, body=message)[0] == 403
    rebound = {**json_bearer, "Host": "attacker.example:80"}
    assert _request(served, "POST", path, headers=rebound, body=message)[0] == 421
    status, headers, stream = _request(served, "POST", path, headers=json_bearer, body=message)
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = _events(stream)
    assert events[-1][0] == "result" and events[-1][1]["output"] == "You said: hi (message 1)"
    assert all(name == "semantic" for name, _ in events[:-1])


def test_a_decision_is_taken_once(served: Served, project: Project) -> None:
    headers = {"Authorization": f"Bearer {served.token}", "Content-Type": "application/json"}
    _, _, stream = _request(
        served, "POST", "/api/sessions/d/messages", headers=headers, body='{"text": "pay"}'
    )
    result = _events(stream)[-1][1]
    assert result["status"] == "interrupted"
    run_id, (interruption,) = result["runId"], result["interruptions"]
    decision = json.dumps(
        {"decisions": [{"interruptionId": interruption["id"], "outcome": "approve"}]}
    )
    path = f"/api/runs/{run_id}/decisions"
    status, _, stream = _request(served, "POST", path, headers=headers, body=decision)
    assert status == 200 and _events(stream)[-1][1]["status"] == "completed"
    status, _, body = _request(served, "POST", path, headers=headers, body=decision)
    assert status == 409 and json.loads(body)["error"]["code"] == "RUN_STATE_STALE"
    assert project.ledger() == ["pay INV-42 1250"]


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip(
            "chromium and chromedriver are not installed (apt-get install chromium chromium-driver)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")  # never let Selenium Manager download anything
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*BROWSER_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def test_the_page_streams_approves_and_keeps_history(
    served: Served, browser: Any, project: Project
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)

    def bubbles() -> list[str]:
        return [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".msg.assistant")]

    browser.get(served.url)
    wait.until(lambda d: "token=" not in str(d.current_url))  # the token left the address bar
    prompt = wait.until(lambda d: d.find_element(By.ID, "prompt"))
    wait.until(lambda d: d.find_element(By.ID, "send").is_enabled())  # the history is drawn
    prompt.send_keys("please pay INV-42", Keys.ENTER)
    approve = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, ".approval button.approve"))
    assert "send_payment (call_pay)" in browser.find_element(By.CSS_SELECTOR, ".approval").text
    assert project.ledger() == []
    approve.click()
    wait.until(lambda d: "Invoice INV-42 is paid." in bubbles())
    assert project.ledger() == ["pay INV-42 1250"]
    tool = browser.find_element(By.CSS_SELECTOR, ".tool").text
    assert "send_payment" in tool and "ok" in tool

    # Streaming: the answer is seen growing, word by word, before it is complete.
    wait.until(lambda d: d.find_element(By.ID, "send").is_enabled())
    browser.find_element(By.ID, "prompt").send_keys("slow please", Keys.ENTER)
    wait.until(lambda d: any(t.startswith("one") and "sixteen" not in t for t in bubbles()))
    wait.until(lambda d: any(t.endswith("sixteen") for t in bubbles()))
    wait.until(lambda d: "request" in d.find_element(By.ID, "usage").text)

    # Reload: the history comes back from the session store.
    browser.refresh()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".msg.assistant")) >= 2)
    users = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".msg.user")]
    assert users == ["please pay INV-42", "slow please"]
    assert "Invoice INV-42 is paid." in bubbles()
    assert "send_payment" in browser.find_element(By.CSS_SELECTOR, ".tool").text
    sessions = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#sessions button")]
    assert "payer" in sessions
    assert "2 run(s)" in browser.find_element(By.ID, "usage").text

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "cli-web-chat.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000


def test_stop_cancels_the_streaming_run_and_the_session_keeps_nothing_of_it(
    served: Served,
) -> None:
    headers = {"Authorization": f"Bearer {served.token}", "Content-Type": "application/json"}
    connection = http.client.HTTPConnection(served.host, served.port, timeout=60)
    try:
        connection.request(
            "POST", "/api/sessions/c/messages", body='{"text": "slow please"}', headers=headers
        )
        response = connection.getresponse()
        assert response.status == 200
        seen = ""
        while '"type": "text.delta"' not in seen and '"type":"text.delta"' not in seen:
            line = response.readline().decode("utf-8")
            assert line, "the stream ended before any text"
            seen += line
        run_id = json.loads(seen.strip().splitlines()[-1].removeprefix("data:"))["runId"]
        status, _, body = _request(
            served, "POST", f"/api/runs/{run_id}/cancel", headers=headers, body="{}"
        )
        assert status == 200 and json.loads(body) == {"cancelled": True}
        rest = seen + response.read().decode("utf-8")
    finally:
        connection.close()
    events = _events(rest)
    assert events[-1][0] == "result" and events[-1][1]["status"] == "cancelled"
    assert not any(e.get("data", {}).get("delta") == "sixteen" for _, e in events)

    status, _, body = _request(served, "GET", "/api/sessions/c", headers=headers)
    assert status == 200 and json.loads(body)["items"] == []
    gone = _request(served, "POST", f"/api/runs/{run_id}/cancel", headers=headers, body="{}")
    assert gone[0] == 404
