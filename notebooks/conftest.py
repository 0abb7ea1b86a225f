"""nbval 0.11 drops ``update_display_data`` ("unhandled iopub msg"), so it would compare a live
widget's first snapshot (the job INITIALIZING) with the final one a saved notebook holds (nbclient
and JupyterLab apply the update in place). This applies each update to the output it names before
nbval compares a cell's outputs, as nbclient does."""

from __future__ import annotations

from typing import Any

import nbval.plugin as _nbval

_get_kernel_message = _nbval.IPyNbFile.get_kernel_message
_compare_outputs = _nbval.IPyNbCell.compare_outputs


def _get_kernel_message_applying_updates(self: Any, *args: Any, **kwargs: Any) -> Any:
    """Remember each display's first data and latest update, by display id."""
    msg = _get_kernel_message(self, *args, **kwargs)
    content = msg.get("content", {})
    display_id = (content.get("transient") or {}).get("display_id")
    if display_id and msg.get("msg_type") in ("display_data", "update_display_data"):
        displays = self.__dict__.setdefault("_display_updates", {})
        if msg["msg_type"] == "display_data":
            displays.setdefault(display_id, [content["data"], content["data"]])
        elif display_id in displays:
            displays[display_id][1] = content["data"]
    return msg


def _compare_updated_outputs(self: Any, test: Any, ref: Any, *args: Any, **kwargs: Any) -> Any:
    """Outputs that were updated in place compare with their latest data."""
    displays = self.parent.__dict__.get("_display_updates", {})
    for out in test:
        data = out.get("data")
        if data is None:
            continue
        for first, latest in displays.values():
            if first == data:
                out["data"] = _nbval.NotebookNode(latest)
                break
    return _compare_outputs(self, test, ref, *args, **kwargs)


_nbval.IPyNbFile.get_kernel_message = _get_kernel_message_applying_updates
_nbval.IPyNbCell.compare_outputs = _compare_updated_outputs
