"""The lines of Flink's print sink (``PrintSinkOutputWriter``): each record's Java text
(:func:`~sessioncluster.common.typeinfo.java_string` of the stream's declared type) after the
``identifier:subtask> `` prefix."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from .typeinfo import RowTypeInfo, TypeInformation, from_type_spec, java_string, row_kind


def print_prefix(identifier: str | None, subtask: int, parallelism: int) -> str:
    """Flink's prefix: the sink identifier, then ``subtask + 1`` when the sink runs in more than
    one subtask (``ID:2> ``, ``2> ``, ``ID> ``), else nothing."""
    prefix = identifier or ""
    if parallelism > 1:
        prefix += (":" if prefix else "") + str(subtask + 1)
    return prefix + "> " if prefix else ""


def print_text(record: Any, type_info: TypeInformation | None) -> str:
    """The text ``print()`` shows of a record of ``type_info``: PyFlink's ``print`` first maps a
    ROW in Python to ``+I[a,1]`` (fields by Python's ``str``: ``None``), other types are printed
    by Java (:func:`java_string`); a FileSink writes Java's ``+I[a, 1]`` instead."""
    if isinstance(type_info, RowTypeInfo) and record is not None:
        return f"{row_kind(record)}[{','.join(str(v) for v in record)}]"
    return java_string(record, type_info)


def line_formatter(config: Mapping[str, Any], subtask: int,
                   parallelism: int) -> Callable[[Any], str]:
    """The printed line of each record of a print sink of ``config`` (its ``print_type``, a
    ``type_spec``, and ``identifier``) in subtask ``subtask`` of ``parallelism``."""
    type_info = from_type_spec(config.get("print_type"))
    prefix = print_prefix(config.get("identifier"), subtask, parallelism)

    def line(record: Any) -> str:
        return prefix + print_text(record, type_info)

    return line
