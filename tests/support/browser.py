"""The real frontend in Debian's Chromium for the browser tests: the page fixture and what the tests do on it."""
from __future__ import annotations

import re
import shutil
import urllib.request

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(comfy_server, object_info, tmp_path_factory):  # object_info first: it cannot be fetched inside Playwright's loop
    if CHROMIUM is None:
        pytest.fail("Debian's chromium is not installed: run `make setup` as root, or apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield open_page(browser, comfy_server.url)
        browser.close()


def open_page(browser, url: str):
    """A page of the frontend at ``url`` as a returning user finds it: its start-up graph open, the pack's extension
    set up, no first-run dialog; ``page.errors`` collects the page's uncaught errors."""
    as_returning_user(url)
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.goto(url, wait_until="domcontentloaded")
    # The frontend opens its start-up graph after the extensions' setup: a graph loaded before would be replaced.
    page.wait_for_function("() => !!(window.app && window.app.extensionManager?.workflow?.activeWorkflow)",
                           timeout=60_000)
    wait_for_extension(page)
    return page


def as_returning_user(url: str) -> None:
    """Mark the server's user as past the first run, so no page opens the first-run template browser: which module's
    page met a fresh profile depended on the order the modules ran in, and on a busy machine the browser opened
    seconds after the graph a test had loaded, its mask taking the test's next click."""
    request = urllib.request.Request(f"{url}/settings/Comfy.TutorialCompleted", data=b"true", method="POST",
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()


EXTENSION = "window.app.extensions.find((e) => e.name === 'editagents.core')"


def wait_for_extension(page) -> None:
    """Until the pack's extension has run its setup: read from the app's own list of extensions (the extension
    writes nothing on ``window``)."""
    page.wait_for_function(f"() => {{ const e = window.app && window.app.extensions && {EXTENSION}; return !!(e && e.loaded); }}",
                           timeout=60_000)


def close_dialogs(page) -> None:
    """A fresh profile opens the template browser over the canvas: close any dialog by its Close button (its
    accessible name from 1.49 on), else with Escape, else (1.32's template browser: an unnamed button, and
    Escape does nothing) by the last button in its header."""
    for attempt in range(6):
        shown = page.locator("[role=dialog]:visible")
        if shown.count() == 0:
            break
        close = shown.first.get_by_role("button", name=re.compile(r"^close$", re.I))
        if close.count():
            close.first.click()
        elif attempt % 2 == 0 or shown.first.locator("button:visible").count() == 0:
            page.keyboard.press("Escape")
        else:
            shown.first.locator("button:visible").last.click(timeout=5_000)
        page.wait_for_timeout(400)


def load_with_photo(page, comfy_server, workflow_name: str, photo, filename: str) -> dict:
    """Put ``photo`` in the server's input folder and load the shipped workflow on the canvas reading it."""
    import numpy as np
    from PIL import Image
    from helpers import WORKFLOWS, load_json

    wait_for_extension(page)
    Image.fromarray((np.clip(photo, 0, 1) * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / filename)
    workflow = load_json(WORKFLOWS / workflow_name)
    next(n for n in workflow["nodes"] if n["type"] == "EditAgentsLoadPhoto")["widgets_values"][0] = filename
    page.evaluate("async (wf) => { await window.app.loadGraphData(wf); }", workflow)
    close_dialogs(page)
    return workflow


# The frontend's parts as a user finds them, by role and name (the names frontends 1.32 to 1.58 give them; the
# class names and test ids around them changed between those versions).
TRACE_TAB = re.compile(r"^Edit Agents: what the agents decided")  # the sidebar tab's tooltip, its accessible name


def run_button(page):
    """The Run button: named Run and reading Run (1.49's split button also names its menu trigger Run)."""
    return page.get_by_role("button", name="Run", exact=True).filter(has_text="Run").first


def press_run(page) -> None:
    """Click the frontend's Run button, once any popover (a workflow tab's preview shows while the mouse
    rests on the tab) has faded away."""
    close_dialogs(page)
    page.mouse.move(700, 600)  # off the tabs and menus, onto the canvas
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.querySelector('.p-popover')", timeout=10_000)
    run_button(page).click()


def open_trace_panel(page) -> None:
    """Open the Agent trace sidebar tab (the pack's panel) unless it is open."""
    if not page.locator(".ea-panel").is_visible():
        page.get_by_role("button", name=TRACE_TAB).first.click()
    page.locator(".ea-panel").wait_for(state="visible", timeout=10_000)
