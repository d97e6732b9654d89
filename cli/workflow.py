"""Workflows: UI format (what the canvas saves) -> API format (what /prompt takes).

The conversion reads the live server's /object_info, so widget values land on the right
inputs for whatever version of every node the server has. UI-only nodes are handled:
Note/MarkdownNote are dropped, Reroute is followed, a Primitive node's value is inlined,
muted nodes (mode 2) are dropped and bypassed nodes (mode 4) pass their input through.
Subgraphs (``definitions.subgraphs``, nested ones included) are expanded first, as the frontend's
Export (API) does: each inner node gets the id ``<instance id>:<inner id>`` and the links through the
subgraph's input and output slots are joined up.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

WIDGET_TYPES = {"INT", "FLOAT", "STRING", "BOOLEAN", "COMBO"}
NOTE_TYPES = {"Note", "MarkdownNote"}
MUTED, BYPASSED = 2, 4
IMAGE_TITLE = "Input Image"  # the shipped workflows mark their image loader with this title
INSTRUCTION_INPUT = "instruction"


class WorkflowError(ValueError):
    pass


def load_workflow(path: Path) -> dict:
    try:
        # UTF-8, as ComfyUI saves workflows, not the locale's code page (cp1252 on most Windows machines);
        # -sig: also with the byte-order mark Windows' Notepad writes
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise WorkflowError(f"cannot read workflow {path}: {err}") from None
    if not isinstance(data, dict):
        raise WorkflowError(f"{path} is not a ComfyUI workflow (expected a JSON object)")
    return data


def is_ui_format(data: dict) -> bool:
    return isinstance(data.get("nodes"), list) and "links" in data


def _is_widget(spec: list) -> bool:
    kind = spec[0]
    opts = spec[1] if len(spec) > 1 and isinstance(spec[1], dict) else {}
    if opts.get("forceInput"):
        return False
    return isinstance(kind, list) or kind in WIDGET_TYPES


SUBGRAPH_INPUT, SUBGRAPH_OUTPUT = -10, -20  # the ids of a subgraph's input and output slots in its links


def _link(raw: Any) -> tuple | None:
    """A link as (id, origin id, origin slot, target id, target slot, type): saved as a list (workflow version
    0.4) or as an object (version 1 and subgraph definitions)."""
    if isinstance(raw, dict):
        return (raw["id"], raw["origin_id"], raw["origin_slot"], raw["target_id"], raw["target_slot"], raw.get("type"))
    return tuple(raw) if raw else None


def flatten_subgraphs(ui: dict) -> dict:
    """The workflow with every subgraph instance replaced by the nodes inside it (recursively), linked as the
    instance was: what the frontend sends when it queues the workflow."""
    definitions = {d["id"]: d for d in (ui.get("definitions") or {}).get("subgraphs", [])}
    if not any(n.get("type") in definitions for n in ui.get("nodes", [])):
        return ui
    flat_nodes: list[dict] = []
    flat_links: list[tuple] = []

    class Scope:
        def __init__(self, graph: dict, path: str, parent: "Scope | None", instance: dict | None):
            self.path, self.parent, self.instance = path, parent, instance
            self.nodes = {n["id"]: n for n in graph.get("nodes", [])}
            self.links = {l[0]: l for l in map(_link, graph.get("links", [])) if l}

        def gid(self, node_id: Any) -> str:
            return f"{self.path}:{node_id}" if self.path else str(node_id)

    def origin(scope: Scope, link_id: Any, depth: int = 0) -> tuple[str, int, Any] | None:
        """The real node (global id), slot and type a link in ``scope`` carries, through subgraph boundaries."""
        if depth > 200:
            raise WorkflowError("link cycle through subgraphs")
        link = scope.links.get(link_id)
        if link is None:
            return None
        _, src, slot, _, _, kind = link
        if src == SUBGRAPH_INPUT:  # from the instance's input slot: follow it in the parent graph
            inputs = scope.instance.get("inputs") or []
            outer = inputs[slot].get("link") if slot < len(inputs) else None
            return origin(scope.parent, outer, depth + 1) if outer is not None else None
        node = scope.nodes.get(src)
        if node is not None and node.get("type") in definitions:  # from a nested instance's output
            inner = Scope(definitions[node["type"]], scope.gid(src), scope, node)
            feed = next((l for l in inner.links.values() if l[3] == SUBGRAPH_OUTPUT and l[4] == slot), None)
            return origin(inner, feed[0], depth + 1) if feed is not None else None
        return (scope.gid(src), slot, kind)

    def expand(scope: Scope, muted: bool = False) -> None:
        for node in scope.nodes.values():
            if node.get("type") in definitions:
                expand(Scope(definitions[node["type"]], scope.gid(node["id"]), scope, node),
                       muted or node.get("mode") in (MUTED, BYPASSED))
                continue
            copy = {**node, "id": scope.gid(node["id"]), "inputs": []}
            if muted:
                copy["mode"] = MUTED
            for inp in node.get("inputs") or []:
                link = inp.get("link")
                found = origin(scope, link) if link is not None else None
                if found is None:
                    copy["inputs"].append({**inp, "link": None})
                    continue
                flat_id = f"{copy['id']}/{inp['name']}"
                flat_links.append((flat_id, found[0], found[1], copy["id"], 0, found[2] or inp.get("type")))
                copy["inputs"].append({**inp, "link": flat_id})
            flat_nodes.append(copy)

    expand(Scope(ui, "", None, None))
    return {**ui, "nodes": flat_nodes, "links": flat_links, "definitions": {}}


def ui_to_api(ui: dict, object_info: dict) -> dict:
    ui = flatten_subgraphs(ui)
    nodes = {n["id"]: n for n in ui["nodes"]}
    links = {l[0]: l for l in map(_link, ui.get("links", [])) if l}

    def source(link_id: int, depth: int = 0) -> tuple[str, Any] | None:
        if depth > 100:
            raise WorkflowError("link cycle through Reroute/bypassed nodes")
        link = links.get(link_id)
        if link is None:
            return None
        origin = nodes.get(link[1])
        if origin is None:
            return None
        if origin["type"] == "Reroute":
            ins = origin.get("inputs") or []
            return source(ins[0]["link"], depth + 1) if ins and ins[0].get("link") is not None else None
        if origin["type"] == "PrimitiveNode":
            return ("value", (origin.get("widgets_values") or [None])[0])
        if origin.get("mode") == MUTED:
            return None
        if origin.get("mode") == BYPASSED:
            for inp in origin.get("inputs") or []:
                if inp.get("type") == link[5] and inp.get("link") is not None:
                    return source(inp["link"], depth + 1)
            return None
        return ("link", [str(origin["id"]), link[2]])

    prompt: dict[str, dict] = {}
    for node in ui["nodes"]:
        kind = node["type"]
        if kind in NOTE_TYPES or kind in ("Reroute", "PrimitiveNode") or node.get("mode") in (MUTED, BYPASSED):
            continue
        info = object_info.get(kind)
        if info is None:
            raise WorkflowError(f"node #{node['id']} is of type '{kind}', which this ComfyUI does not have "
                                "(a missing custom node pack?)")
        order = info.get("input_order") or {k: list(v) for k, v in info.get("input", {}).items()}
        specs = {**info["input"].get("required", {}), **info["input"].get("optional", {})}
        inputs: dict[str, Any] = {}
        values = node.get("widgets_values")
        if isinstance(values, dict):
            inputs.update({k: v for k, v in values.items() if k in specs})
        elif values:
            inputs.update(_widget_values(values, order, specs))
        # A workflow saved by an older version may lack widgets added since: the frontend shows their
        # defaults, so the conversion uses them too.
        linked = {inp["name"] for inp in node.get("inputs") or [] if inp.get("link") is not None}
        for name in order.get("required", []):
            spec = specs[name]
            if name not in inputs and name not in linked and _is_widget(spec):
                default = _default(spec)
                if default is not None:
                    inputs[name] = default
        for inp in node.get("inputs") or []:
            if inp.get("link") is None:
                continue
            src = source(inp["link"])
            if src is not None:
                inputs[inp["name"]] = src[1]
        prompt[str(node["id"])] = {"class_type": kind, "inputs": inputs,
                                   "_meta": {"title": node.get("title") or info.get("display_name") or kind}}
    return prompt


def _default(spec: list) -> Any:
    opts = spec[1] if len(spec) > 1 and isinstance(spec[1], dict) else {}
    if "default" in opts:
        return opts["default"]
    if isinstance(spec[0], list) and spec[0]:  # a legacy combo: the first option
        return spec[0][0]
    if spec[0] == "COMBO" and opts.get("options"):
        return opts["options"][0]
    return None


async def to_api(data: dict, client) -> dict:
    """Accept either format; UI format is converted with the server's /object_info."""
    if is_ui_format(data):
        return ui_to_api(data, await client.object_info())
    if data and all(isinstance(v, dict) and "class_type" in v for v in data.values()):
        return json.loads(json.dumps(data))
    raise WorkflowError("not a ComfyUI workflow: expected UI format ('nodes' and 'links') or API format "
                        "({id: {class_type, inputs}})")


SEED_NAMES = ("seed", "noise_seed")


def _control_after_generate(name: str, spec: list) -> str | None:
    """The value the frontend's "control after generate" widget after this input starts at, or None where it
    shows none. Frontends 1.32 to 1.58 add one where the spec asks (``control_after_generate``: true or the
    starting mode) and, unasked, to an INT named seed or noise_seed; an explicit false stops it. A workflow
    file keeps its seed: "fixed" unless the spec names another mode."""
    opts = spec[1] if len(spec) > 1 and isinstance(spec[1], dict) else {}
    flag = opts.get("control_after_generate")
    if flag is None and spec[0] == "INT" and name in SEED_NAMES:
        flag = True
    if not flag:
        return None
    return flag if isinstance(flag, str) else "fixed"


def _extra_widget_value(name: str, spec: list, controls: bool = True) -> Any:
    """The value the frontend stores after a widget that has a companion (seed control, upload button);
    ``controls`` False leaves the control widgets out."""
    control = _control_after_generate(name, spec) if controls else None
    if control is not None:
        return control
    opts = spec[1] if len(spec) > 1 and isinstance(spec[1], dict) else {}
    if opts.get("image_upload"):
        return "image"
    return None


def _widget_values(values: list, order: dict, specs: dict) -> dict[str, Any]:
    """Positional widget values (as the canvas saves them) by input name, stepping over companion values.

    A file saved before a seed had its control widget (frontend 1.32 showed none on the MCTS Planner's seed,
    which now declares one) holds one value fewer for it; when the count says exactly that, it is read so, and
    converts as it opened when it was saved."""
    names = [n for n in order.get("required", []) + order.get("optional", []) if _is_widget(specs[n])]
    without = sum(1 + (_extra_widget_value(n, specs[n], controls=False) is not None) for n in names)
    controls = len(values) != without or all(_control_after_generate(n, specs[n]) is None for n in names)
    out, it = {}, iter(values)
    for name in names:
        try:
            out[name] = next(it)
            if _extra_widget_value(name, specs[name], controls) is not None:
                next(it)
        except StopIteration:
            break
    return out


def api_to_ui(prompt: dict, object_info: dict, titles: dict[str, str] | None = None, note: str = "") -> dict:
    """An API-format prompt as a UI-format workflow (what ComfyUI's canvas saves and loads).

    Widgets are written in the node's input order with the frontend's companion values; links get
    ids; nodes are laid out in columns by their depth in the graph (see ``_layout``); ``note`` becomes
    a Markdown note at the top left.
    """
    titles = titles or {}
    keys = list(prompt)
    ids = {k: i + 1 for i, k in enumerate(keys)}
    depth: dict[str, int] = {}

    def depth_of(key: str, seen: tuple = ()) -> int:
        if key not in depth:
            sources = [v[0] for v in prompt[key]["inputs"].values() if isinstance(v, list) and len(v) == 2
                       and v[0] in prompt and v[0] not in seen]
            depth[key] = 1 + max((depth_of(src, seen + (key,)) for src in sources), default=-1)
        return depth[key]

    nodes, links = [], []
    for key in keys:
        node = prompt[key]
        info = object_info[node["class_type"]]
        specs = {**info["input"].get("required", {}), **info["input"].get("optional", {})}
        order = info.get("input_order", {})
        sockets, widgets = [], []
        for name in order.get("required", []) + order.get("optional", []):
            spec, value = specs[name], node["inputs"].get(name)
            if isinstance(value, list) and len(value) == 2 and value[0] in prompt:
                link_id = len(links) + 1
                src_info = object_info[prompt[value[0]]["class_type"]]
                link_type = src_info["output"][value[1]]
                entry = {"name": name, "type": link_type, "link": link_id}
                if _is_widget(spec):
                    entry["widget"] = {"name": name}
                links.append([link_id, ids[value[0]], value[1], ids[key], len(sockets), link_type])
                sockets.append(entry)
                if _is_widget(spec):
                    widgets.append(_default(spec))
                continue
            if _is_widget(spec):
                widgets.append(value if name in node["inputs"] else _default(spec))
                extra = _extra_widget_value(name, spec)
                if extra is not None:
                    widgets.append(extra)
            else:
                sockets.append({"name": name, "type": spec[0], "link": None})
        height = 80 + 26 * len(widgets) + 22 * len(sockets)
        outputs = [{"name": n, "type": t, "links": [], "slot_index": i}
                   for i, (t, n) in enumerate(zip(info["output"], info.get("output_name") or info["output"]))]
        entry = {"id": ids[key], "type": node["class_type"], "pos": [0, 0], "size": [360, height], "flags": {}, "order": 0, "mode": 0, "inputs": sockets, "outputs": outputs,
                 "properties": {"Node name for S&R": node["class_type"]}, "widgets_values": widgets}
        if key in titles or node.get("_meta", {}).get("title"):
            entry["title"] = titles.get(key) or node["_meta"]["title"]
        nodes.append(entry)
    by_id = {n["id"]: n for n in nodes}
    for link in links:
        by_id[link[1]]["outputs"][link[2]]["links"].append(link[0])
    for order_index, key in enumerate(sorted(keys, key=depth_of)):
        by_id[ids[key]]["order"] = order_index
    _layout(nodes, [depth_of(k) for k in keys], top=380 if note else 40)
    if note:
        nodes.append({"id": len(nodes) + 1, "type": "MarkdownNote", "pos": [40, 40], "size": [760, 300], "flags": {}, "order": len(nodes), "mode": 0, "inputs": [], "outputs": [],
                      "properties": {}, "title": "About this workflow", "widgets_values": [note]})
    return {"last_node_id": len(nodes), "last_link_id": len(links), "nodes": nodes, "links": links, "groups": [],
            "config": {}, "extra": {"ds": {"scale": 0.8, "offset": [0, 0]}}, "version": 0.4}


COLUMN_WIDTH, GAP, MAX_COLUMN_HEIGHT = 400, 40, 1000


def _layout(nodes: list[dict], depths: list[int], top: int) -> None:
    """Columns left to right by graph depth; a column taller than MAX_COLUMN_HEIGHT wraps into the next
    (so six brains side by side, not one long strip), keeping the canvas close to the screen's shape."""
    x = 40
    for d in sorted(set(depths)):
        y = top
        for node, depth in zip(nodes, depths):
            if depth != d:
                continue
            if y > top and y + node["size"][1] > top + MAX_COLUMN_HEIGHT:
                x, y = x + COLUMN_WIDTH, top
            node["pos"] = [x, y]
            y += node["size"][1] + GAP
        x += COLUMN_WIDTH


def find_node(prompt: dict, ref: str) -> str:
    """A node id, or a node title (unique), or a class type (unique)."""
    if ref in prompt:
        return ref
    for key in ("title", "class_type"):
        hits = [nid for nid, n in prompt.items()
                if (n.get("_meta", {}).get("title") if key == "title" else n["class_type"]) == ref]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise WorkflowError(f"{len(hits)} nodes match '{ref}' (ids {', '.join(hits)}); use a node id")
    titles = ", ".join(f"#{nid} '{n.get('_meta', {}).get('title', n['class_type'])}'" for nid, n in prompt.items())
    raise WorkflowError(f"no node with id or title '{ref}'. Nodes: {titles}")


def parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def apply_settings(prompt: dict, settings: list[str]) -> None:
    for item in settings:
        target, sep, value = item.partition("=")
        ref, dot, name = target.rpartition(".")
        if not sep or not dot or not ref or not name:
            raise WorkflowError(f"--set expects NODE_TITLE_OR_ID.INPUT=VALUE, got '{item}'")
        prompt[find_node(prompt, ref)]["inputs"][name] = parse_value(value)


IMAGE_LOADERS = ("LoadImage", "EditAgentsLoadPhoto")  # ComfyUI's, and the pack's (16-bit, profiles, EXIF)


def set_image(prompt: dict, image_name: str) -> str:
    loaders = [nid for nid, n in prompt.items() if n["class_type"] in IMAGE_LOADERS]
    marked = [nid for nid in loaders if prompt[nid].get("_meta", {}).get("title") == IMAGE_TITLE]
    chosen = marked or loaders
    if len(chosen) != 1:
        raise WorkflowError(f"the workflow has {len(loaders)} Load Image / Load Photo nodes; title one of them "
                            f"'{IMAGE_TITLE}' or use --set to set images by node id")
    prompt[chosen[0]]["inputs"]["image"] = image_name
    return chosen[0]


def set_instruction(prompt: dict, text: str) -> list[str]:
    hits = [nid for nid, n in prompt.items() if INSTRUCTION_INPUT in n["inputs"]
            and not isinstance(n["inputs"][INSTRUCTION_INPUT], list)]
    if not hits:
        raise WorkflowError("this workflow has no instruction input (it runs autonomously); drop --instruction")
    for nid in hits:
        prompt[nid]["inputs"][INSTRUCTION_INPUT] = text
    return hits
