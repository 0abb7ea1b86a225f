"""One TaskManager agent per executor JVM, however many Python daemons Spark starts in it."""

from __future__ import annotations

import os
from pathlib import Path

from sessioncluster.taskmanager.daemon import claim_executor


def test_the_first_daemon_of_an_executor_claims_it_and_the_others_use_its_agent(tmp_path: Path) -> None:
    fd, ipc = claim_executor(4242, "ipc:///x/tm-1.ipc", str(tmp_path))
    assert fd is not None and ipc == "ipc:///x/tm-1.ipc"
    # a SQL UDF's daemon of the same JVM: no agent of its own, the first one's address
    assert claim_executor(4242, "ipc:///x/tm-2.ipc", str(tmp_path)) == (None, "ipc:///x/tm-1.ipc")
    # another executor is another TaskManager
    other, _ = claim_executor(4243, "ipc:///x/tm-3.ipc", str(tmp_path))
    assert other is not None
    os.close(other)
    # the agent gone (its lock released): the next daemon starts a new one
    os.close(fd)
    again, ipc = claim_executor(4242, "ipc:///x/tm-4.ipc", str(tmp_path))
    assert again is not None and ipc == "ipc:///x/tm-4.ipc"
    os.close(again)
