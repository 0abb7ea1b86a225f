"""A real IPython kernel (jupyter_client) that tests drive cell by cell, as a notebook would."""

from __future__ import annotations

import json
import queue
import textwrap
from dataclasses import dataclass, field
from typing import Any

from jupyter_client.manager import KernelManager, start_new_kernel

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: the messages of a cell a CellResult keeps
OUTPUTS = ("stream", "display_data", "update_display_data", "execute_result", "error")


class CellError(AssertionError):
    """A cell raised; the message has the kernel's traceback."""


@dataclass
class CellResult:
    """What a cell sent: its outputs (stream, display_data, execute_result, error)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    #: the msg_id of the cell's execute_request (the parent of everything it sent)
    msg_id: str = ""
    code: str = ""
    #: the kernel went idle after the cell
    idle: bool = False

    @property
    def stdout(self) -> str:
        return "".join(m["content"]["text"] for m in self.messages
                       if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(m["content"]["text"] for m in self.messages
                       if m["msg_type"] == "stream" and m["content"]["name"] == "stderr")

    def data(self, kinds: tuple[str, ...] = ("display_data", "execute_result"),
             ) -> list[dict[str, Any]]:
        return [m["content"]["data"] for m in self.messages if m["msg_type"] in kinds]

    @property
    def widget_ids(self) -> list[str]:
        """The model ids of the widgets the cell displayed."""
        return [d[WIDGET_VIEW]["model_id"] for d in self.data() if WIDGET_VIEW in d]

    def json(self) -> Any:
        """The last stdout line, as JSON."""
        return json.loads(self.stdout.strip().splitlines()[-1])


class Kernel:
    """One kernel; ``run(code)`` executes a cell and returns what it sent."""

    def __init__(self, env: dict[str, str]) -> None:
        self.km: KernelManager
        self.km, self.kc = start_new_kernel(kernel_name="python3", env=env)
        self.iopub: list[dict[str, Any]] = []

    def run(self, code: str, timeout: float = 180.0, allow_error: bool = False) -> CellResult:
        return self.finish(self.start(code), timeout, allow_error)

    def start(self, code: str) -> CellResult:
        """Start executing a cell; :meth:`next_output` and :meth:`finish` follow it."""
        return CellResult(msg_id=self.kc.execute(textwrap.dedent(code), store_history=True),
                          code=code)

    def next_output(self, result: CellResult, timeout: float = 180.0) -> dict[str, Any] | None:
        """The cell's next message kept in ``result`` (None: the kernel went idle)."""
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=timeout)
            except queue.Empty:
                raise CellError(f"no idle from the kernel in {timeout} s for:\n"
                                f"{result.code}") from None
            self.iopub.append(msg)
            if msg["parent_header"].get("msg_id") != result.msg_id:
                continue
            if msg["msg_type"] in OUTPUTS:
                result.messages.append(msg)
                return msg
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                result.idle = True
                return None

    def finish(self, result: CellResult, timeout: float = 180.0,
               allow_error: bool = False) -> CellResult:
        """Wait until the cell has run; raise :class:`CellError` if it failed."""
        code, msg_id = result.code, result.msg_id
        while not result.idle and self.next_output(result, timeout) is not None:
            pass
        reply = self.kc.get_shell_msg(timeout=timeout)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=timeout)
        if reply["content"]["status"] != "ok" and not allow_error:
            tb = "\n".join(reply["content"].get("traceback", []))
            raise CellError(f"cell failed:\n{code}\n{tb}\nstdout: {result.stdout}\n"
                            f"stderr: {result.stderr}")
        return result

    def comm_updates(self, model_id: str) -> list[dict[str, Any]]:
        """The state updates the kernel sent to the frontend for one widget model."""
        return [m["content"]["data"]["state"] for m in self.iopub
                if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == model_id
                and m["content"]["data"].get("method") == "update"]

    def restart(self, timeout: float = 120.0) -> None:
        """Restart the kernel process, as the notebook's Restart does; its state is gone."""
        self.km.restart_kernel(now=True)
        self.kc.wait_for_ready(timeout=timeout)
        self.iopub.clear()

    def shutdown(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)
