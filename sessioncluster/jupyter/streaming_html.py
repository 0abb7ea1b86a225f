"""HTML of a STREAMING job's live parts: rate, watermark, checkpoints and the latest results."""

from __future__ import annotations

import datetime
from html import escape
from typing import Any

from .html import format_value, table

#: checkpoints shown, newest first
CHECKPOINT_ROWS = 5


def _time(ms: int | None) -> str:
    if not ms or ms < 0:
        return "–"
    return datetime.datetime.fromtimestamp(ms / 1000).strftime("%H:%M:%S.%f")[:-3]


def streaming_panel(info: dict[str, Any]) -> str:
    """Records per second, the watermark, checkpoint counts, the latest checkpoints and the
    savepoint the job was restored from."""
    counts = info.get("counts", {})
    watermark = info.get("watermark")
    parts = [f"<b>{info.get('records_per_second', 0.0):.1f}</b> records/s",
             f"watermark <b>{escape(_time(watermark)) if watermark else 'none'}</b>",
             f"checkpoints <b>{counts.get('completed', 0)}</b> completed, "
             f"{counts.get('failed', 0)} failed (every {info.get('interval_ms') or 200} ms)"]
    if info.get("restarts"):
        parts.append(f"restarts <b>{info['restarts']}</b>")
    html = f'<div style="margin: 4px 0;">{" · ".join(parts)}</div>'
    restored = info.get("restored")
    if restored is not None:
        html += (f'<div style="margin: 2px 0;">restored from savepoint '
                 f'<code>{escape(str(restored.external_path))}</code></div>')
    for location in info.get("savepoints", []):
        html += f'<div style="margin: 2px 0;">savepoint <code>{escape(location)}</code></div>'
    checkpoints = list(info.get("checkpoints", []))[-CHECKPOINT_ROWS:][::-1]
    if checkpoints:
        html += table(["checkpoint", "status", "triggered", "duration", "state size", "records"],
                      [[str(c.checkpoint_id), escape(c.status), _time(c.trigger_ms),
                        f"{c.duration_ms} ms", f"{c.state_size / 1024:.1f} KiB", str(c.processed)]
                       for c in checkpoints])
    return html


def latest_results(values: list[Any]) -> str:
    """The latest records of the job's collect sink, newest last."""
    if not values:
        return '<div style="color: #777;">no results yet</div>'
    return table(["latest results"], [[escape(format_value(v))] for v in values])
