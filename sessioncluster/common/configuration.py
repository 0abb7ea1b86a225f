"""PyFlink's ``Configuration``: string keys and values, with typed getters and setters."""

from __future__ import annotations

from typing import Any


class Configuration:
    """A set of ``key: value`` options (``pyflink.common.Configuration``); values are kept as
    strings, as Flink does, and parsed by the typed getters."""

    def __init__(self, other: "Configuration | None" = None) -> None:
        self._data: dict[str, str] = dict(other._data) if other is not None else {}

    # -- str -----------------------------------------------------------------------------------
    def get_string(self, key: str, default_value: str) -> str:
        return self._data.get(key, default_value)

    def set_string(self, key: str, value: str) -> "Configuration":
        self._data[key] = str(value)
        return self

    # -- typed ---------------------------------------------------------------------------------
    def get_integer(self, key: str, default_value: int) -> int:
        return self._parse(key, default_value, int)

    def set_integer(self, key: str, value: int) -> "Configuration":
        self._data[key] = str(int(value))
        return self

    def get_float(self, key: str, default_value: float) -> float:
        return self._parse(key, default_value, float)

    def set_float(self, key: str, value: float) -> "Configuration":
        self._data[key] = str(float(value))
        return self

    def get_boolean(self, key: str, default_value: bool) -> bool:
        if key not in self._data:
            return default_value
        text = self._data[key].strip().lower()
        if text not in ("true", "false"):
            raise ValueError(f"option {key!r} is {self._data[key]!r}, not a boolean (true/false)")
        return text == "true"

    def set_boolean(self, key: str, value: bool) -> "Configuration":
        self._data[key] = "true" if value else "false"
        return self

    def get_bytearray(self, key: str, default_value: bytearray) -> bytearray:
        return bytearray(self._data[key], "utf-8") if key in self._data else default_value

    def set_bytearray(self, key: str, value: bytes) -> "Configuration":
        self._data[key] = bytes(value).decode("utf-8")
        return self

    def _parse(self, key: str, default_value: Any, kind: type) -> Any:
        if key not in self._data:
            return default_value
        try:
            return kind(self._data[key])
        except ValueError:
            raise ValueError(f"option {key!r} is {self._data[key]!r}, not a {kind.__name__}") from None

    # -- the whole ------------------------------------------------------------------------------
    def key_set(self) -> set[str]:
        return set(self._data)

    def contains_key(self, key: str) -> bool:
        return key in self._data

    def remove_config(self, key: str) -> bool:
        return self._data.pop(key, None) is not None

    def add_all(self, other: "Configuration", prefix: str | None = None) -> "Configuration":
        for k, v in other._data.items():
            self._data[(prefix or "") + k] = v
        return self

    def add_all_to_dict(self, target: dict[str, Any]) -> None:
        target.update(self._data)

    def to_dict(self) -> dict[str, str]:
        return dict(self._data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Configuration) and self._data == other._data

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._data.items())))

    def __repr__(self) -> str:
        return f"Configuration({self._data!r})"
