"""Edit Agents: a ComfyUI custom node pack that makes ComfyUI an agentic image editor.

Imported by ComfyUI as a custom node pack, and as ``edit_agents`` by the CLI and tests:
nothing ComfyUI-specific is imported until ComfyUI calls ``comfy_entrypoint``.
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

WEB_DIRECTORY = "./web"

# The photo every shipped workflow's Load Image names (scikit-image's "chelsea"). It is copied into ComfyUI's
# input folder when the pack loads, so each workflow runs as it is on a fresh install.
SAMPLE_IMAGE = Path(__file__).resolve().parent / "sample_images" / "edit_agents_chelsea.png"

log = logging.getLogger("edit_agents")


def install_sample_image(input_dir: str | Path | None = None) -> Path | None:
    """Copy the sample photo into ``input_dir`` (default: ComfyUI's input folder) unless a file of that name
    is there already (never overwritten). A folder that cannot be written is logged, not raised: the pack
    still loads, and the workflows then need a photo picked in their Load Image. Returns the file, or None."""
    try:
        if input_dir is None:
            import folder_paths  # ComfyUI's; only when loaded by ComfyUI

            input_dir = folder_paths.get_input_directory()
        target = Path(input_dir) / SAMPLE_IMAGE.name
        if target.exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        try:
            shutil.copyfile(SAMPLE_IMAGE, partial)  # then renamed: a reader never sees half a file
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
        return target
    except Exception as err:  # a read-only or missing folder must not stop the pack from loading
        log.warning("Edit Agents: could not copy the sample photo %s into ComfyUI's input folder (%s); the "
                    "example workflows need a photo picked in their Load Image node", SAMPLE_IMAGE.name, err)
        return None


async def comfy_entrypoint():
    from .nodes import EditAgentsExtension

    install_sample_image()
    return EditAgentsExtension()
