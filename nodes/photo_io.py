"""Load Photo and Save Photo: 16-bit files, colour profiles and EXIF, in and out (tools/photo_io.py does the work).

ComfyUI's Load Image divides a 16-bit gray PNG by 255 (it arrives near white) and reads 16-bit colour at 8 bits,
ignores an embedded profile, and its Save Image writes 8-bit sRGB PNGs with the prompt in them. These keep what a
photographer's file holds."""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import torch
from comfy_api.latest import io

from ..agents.trace import Trace
from ..tools.photo_io import FORMATS, PhotoError, read_photo, write_photo
from .common import continue_trace
from .convert import image_batch_to_arrays
from .types import CATEGORY, PREFIX, TRACE

PHOTO = io.Custom(PREFIX + "PHOTO")
AS_ORIGINAL = "as the original"
BITS = (AS_ORIGINAL, "8", "16")
PROFILES = ("the original's", "sRGB")


def _input_files() -> list[str]:
    import folder_paths

    folder = folder_paths.get_input_directory()
    files = [f for f in os.listdir(folder) if os.path.isfile(os.path.join(folder, f))]
    return sorted(folder_paths.filter_files_content_types(files, ["image"]))


class LoadPhoto(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsLoadPhoto", display_name="Load Photo", category=CATEGORY,
            description="Loads a photo at its full bit depth (8- or 16-bit PNG and TIFF, JPEG, WebP), applies the EXIF "
                        "orientation and converts an embedded colour profile (Adobe RGB, Display P3, ...) to sRGB, "
                        "so the agents judge colour in the space they measure in. Connect PHOTO to Save Photo to "
                        "write the result back in the original's bit depth and profile, with its EXIF.",
            inputs=[io.Combo.Input("image", options=_input_files(), upload=io.UploadType.image,
                                   tooltip="A photo in ComfyUI's input folder (or upload one).")],
            outputs=[io.Image.Output(display_name="image", tooltip="The photo in sRGB, full precision (float)."),
                     io.Mask.Output(display_name="mask", tooltip="Where the photo is transparent (as Load Image's)."),
                     PHOTO.Output(display_name="photo", tooltip="What the file was (bit depth, profile, EXIF): for "
                                                                 "Save Photo."),
                     TRACE.Output(display_name="trace", tooltip="What was read and converted.")],
        )

    @classmethod
    def fingerprint_inputs(cls, image):
        import folder_paths

        with open(folder_paths.get_annotated_filepath(image), "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    @classmethod
    def validate_inputs(cls, image):
        import folder_paths

        if not folder_paths.exists_annotated_filepath(image):
            return f"Load Photo: no file {image!r} in ComfyUI's input folder; upload it or pick another"
        return True

    @classmethod
    def execute(cls, image) -> io.NodeOutput:
        import folder_paths

        path = folder_paths.get_annotated_filepath(image)
        with open(path, "rb") as f:
            try:
                photo = read_photo(f.read(), os.path.basename(path))
            except PhotoError as err:
                raise ValueError(f"Load Photo: {err}") from None
        trace = Trace(title="Load Photo")
        said = photo.describe()
        trace.add("loop", "load photo", f"{os.path.basename(path)}: {said['bits']}-bit {said['channels']} "
                                        f"{said['format']}, profile {said['profile']}"
                                        + (f"; {'; '.join(photo.notes)}" if photo.notes else ""),
                  outputs={"photo": said})
        trace.summary = {"photo": said}
        mask = 1.0 - photo.alpha if photo.alpha is not None else np.zeros(photo.image.shape[:2], np.float32)
        return io.NodeOutput(torch.from_numpy(photo.image)[None], torch.from_numpy(np.ascontiguousarray(mask))[None],
                             photo, trace)


class SavePhoto(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsSavePhoto", display_name="Save Photo", category=CATEGORY,
            description="Saves photos as PNG or TIFF (8 or 16 bits) or JPEG, with the original's colour profile "
                        "re-applied (or sRGB tagged) and its EXIF (the orientation, already applied, removed). Nothing "
                        "of the prompt or the workflow is written into the file. A photo saved unedited keeps the "
                        "original's own values, bit for bit. With a trace connected, it is saved beside the photo.",
            inputs=[io.Image.Input("images", tooltip="The photos to save."),
                    io.String.Input("filename_prefix", default="edit_agents/photo",
                                    tooltip="File name prefix, under ComfyUI's output folder."),
                    io.Combo.Input("format", options=list(FORMATS), default="png",
                                   tooltip="png and tiff keep 16 bits; jpeg is 8-bit."),
                    io.Combo.Input("bits", options=list(BITS), default=AS_ORIGINAL,
                                   tooltip="Bits per channel: the original's (from PHOTO; 8 without it), 8 or 16."),
                    io.Int.Input("quality", default=95, min=1, max=100, tooltip="JPEG quality."),
                    io.Combo.Input("profile", options=list(PROFILES), default=PROFILES[0],
                                   tooltip="Write in the original's colour profile (from PHOTO), or in sRGB."),
                    PHOTO.Input("photo", optional=True, tooltip="Load Photo's PHOTO: its bit depth, profile and EXIF."),
                    TRACE.Input("trace", optional=True, tooltip="A trace to save beside the photo, as JSON.")],
            outputs=[], is_output_node=True,
        )

    @classmethod
    def execute(cls, images, filename_prefix, format, bits, quality, profile, photo=None, trace=None) -> io.NodeOutput:
        import folder_paths

        arrays = image_batch_to_arrays(images)
        h, w = arrays[0].shape[:2]
        folder, name, counter, subfolder, _ = folder_paths.get_save_image_path(filename_prefix,
                                                                                folder_paths.get_output_directory(), w, h)
        depth = None if bits == AS_ORIGINAL else int(bits)
        ext = {"png": "png", "tiff": "tif", "jpeg": "jpg"}[format]
        saved, notes = [], []
        for i, arr in enumerate(arrays):
            rgb = arr[..., :3] if arr.shape[2] >= 3 else np.repeat(arr[..., :1], 3, axis=2)
            try:
                data, said = write_photo(rgb.astype(np.float32), format, depth, photo, quality=quality,
                                         profile="original" if profile == PROFILES[0] else "sRGB")
            except PhotoError as err:
                raise ValueError(f"Save Photo: {err}") from None
            file = f"{name}_{counter + i:05}_.{ext}"
            with open(os.path.join(folder, file), "wb") as f:
                f.write(data)
            saved.append({"filename": file, "subfolder": subfolder, "type": "output"})
            notes.append(f"{file}: {', '.join(said)}")
        if trace is not None:
            out = continue_trace(trace, "Save Photo")
            out.summary = {**out.summary, "saved": notes} | ({"source": photo.describe()} if photo is not None else {})
            with open(os.path.join(folder, f"{name}_{counter:05}_.trace.json"), "w") as f:
                json.dump(out.to_dict(), f, indent=1, default=str)
        return io.NodeOutput(ui={"images": saved, "text": notes})


NODES = [LoadPhoto, SavePhoto]
