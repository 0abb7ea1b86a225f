"""Files only their owner may read, written atomically (connection files, the job store,
blobs): a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import os
from pathlib import Path


def write_private(path: Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` with mode 0600 through a temporary file and a rename; the
    parent directory is made (mode 0700) if missing."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.chmod(tmp, 0o600)  # O_CREAT's mode is masked by the umask
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
