"""Writes workflows/<name>.jpg, the picture ComfyUI's template browser shows for each example workflow:
the workflow on the real frontend's canvas (Debian's Chromium, headless), fitted to view.

Run after changing a workflow: .venv/bin/python scripts/build_thumbnails.py
"""
from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

from PIL import Image, ImageChops

from edit_agents.cli.server import LocalServer

WORKFLOWS = Path(__file__).resolve().parent.parent / "workflows"
SIZE = (640, 480)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def screenshot_workflow(page, workflow: dict) -> Image.Image:
    page.evaluate("async (wf) => { await window.app.loadGraphData(wf); }", workflow)
    for _ in range(3):  # a fresh profile opens the template browser over the canvas: close it
        if page.locator(".p-dialog-mask").count() == 0:
            break
        buttons = page.locator("[role=dialog] button:visible")
        if buttons.count():
            buttons.last.click()
        else:
            page.keyboard.press("Escape")
        page.wait_for_timeout(400)
    page.evaluate("() => window.app.extensionManager.command.execute('Comfy.Canvas.FitView')")
    page.wait_for_timeout(600)
    shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    background = shot.getpixel((2, 2))
    # crop to the nodes: the bounding box of what differs from the empty canvas, with a margin
    diff = ImageChops.difference(shot, Image.new("RGB", shot.size, background)).convert("L").point(lambda v: 255 if v > 24 else 0)
    diff.paste(0, (shot.width - 160, 0, shot.width, 160))  # the focus-mode button, top right
    left, top, right, bottom = diff.getbbox() or (0, 0, *shot.size)
    image = shot.crop((max(left - 24, 0), max(top - 24, 0), min(right + 24, shot.width), min(bottom + 24, shot.height)))
    canvas = Image.new("RGB", SIZE, background)  # letterboxed on the canvas colour
    image.thumbnail(SIZE, Image.LANCZOS)
    canvas.paste(image, ((SIZE[0] - image.width) // 2, (SIZE[1] - image.height) // 2))
    return canvas


def main() -> int:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("Debian's chromium is needed: apt-get install chromium", file=sys.stderr)
        return 1
    with LocalServer() as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1600, "height": 1000}, device_scale_factor=2)
        page.goto(server.url, wait_until="domcontentloaded")
        page.wait_for_function("() => { const e = window.app && window.app.extensions && window.app.extensions.find((x) => x.name === 'editagents.core'); return !!(e && e.loaded); }", timeout=60_000)
        page.evaluate("""async () => {
            const settings = window.app.extensionManager.setting;
            await settings.set('Comfy.Minimap.Visible', false);
            await settings.set('Comfy.TutorialCompleted', true);
            await settings.set('Comfy.Graph.CanvasInfo', false);
            await settings.set('Comfy.Graph.CanvasMenu', false);
            await settings.set('LiteGraph.Canvas.MinFontSizeForLOD', 0);  // draw text even when zoomed out
            await settings.set('LiteGraph.Canvas.LowQualityRenderingZoomThreshold', 0.1);
        }""")
        page.evaluate("() => window.app.extensionManager.command.execute('Workspace.ToggleFocusMode')")  # no menus
        for path in sorted(WORKFLOWS.glob("*.json")):
            picture = screenshot_workflow(page, json.loads(path.read_text()))
            out = path.with_suffix(".jpg")
            picture.save(out, quality=82, optimize=True)
            print(f"wrote workflows/{out.name} ({out.stat().st_size // 1024} kB)")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
