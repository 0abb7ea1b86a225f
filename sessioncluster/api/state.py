"""Keyed state with PyFlink's names: descriptors, state objects, and the per-operator backend.

The state objects read and write one table (a dict per state name) of a ``KeyedStateStore`` at its
``current_key``; the store itself is the runtime's ``KeyedStateBackend``
(``sessioncluster.runtime.state_backend``).
"""

from __future__ import annotations

import enum
from typing import Any, Callable, Iterable, Iterator

from ..common.time import Duration, Time, to_millis


class StateTtlConfig:
    """State time-to-live (accepted: in BATCH mode processing time does not advance during a job,
    so no state expires)."""

    class UpdateType(enum.Enum):
        Disabled = 0
        OnCreateAndWrite = 1
        OnReadAndWrite = 2

    class StateVisibility(enum.Enum):
        ReturnExpiredIfNotCleanedUp = 0
        NeverReturnExpired = 1

    class TtlTimeCharacteristic(enum.Enum):
        ProcessingTime = 0

    def __init__(self, ttl_millis: int, update_type: "StateTtlConfig.UpdateType",
                 state_visibility: "StateTtlConfig.StateVisibility") -> None:
        self.ttl_millis = ttl_millis
        self.update_type = update_type
        self.state_visibility = state_visibility

    @staticmethod
    def new_builder(ttl: Time | Duration | int) -> "StateTtlConfig.Builder":
        return StateTtlConfig.Builder(ttl)

    def get_ttl(self) -> Time:
        return Time(self.ttl_millis)

    def get_update_type(self) -> "StateTtlConfig.UpdateType":
        return self.update_type

    def get_state_visibility(self) -> "StateTtlConfig.StateVisibility":
        return self.state_visibility

    def is_enabled(self) -> bool:
        return self.update_type is not StateTtlConfig.UpdateType.Disabled

    class Builder:
        def __init__(self, ttl: Time | Duration | int) -> None:
            self._ttl = to_millis(ttl)
            self._update_type = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._visibility = StateTtlConfig.StateVisibility.NeverReturnExpired

        def set_update_type(self, update_type: "StateTtlConfig.UpdateType") -> "StateTtlConfig.Builder":
            self._update_type = update_type
            return self

        def update_ttl_on_create_and_write(self) -> "StateTtlConfig.Builder":
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> "StateTtlConfig.Builder":
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(self,
                                 visibility: "StateTtlConfig.StateVisibility") -> "StateTtlConfig.Builder":
            self._visibility = visibility
            return self

        def return_expired_if_not_cleaned_up(self) -> "StateTtlConfig.Builder":
            return self.set_state_visibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)

        def never_return_expired(self) -> "StateTtlConfig.Builder":
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(self, characteristic: Any) -> "StateTtlConfig.Builder":
            return self

        def use_processing_time(self) -> "StateTtlConfig.Builder":
            return self

        def set_ttl(self, ttl: Time | Duration | int) -> "StateTtlConfig.Builder":
            self._ttl = to_millis(ttl)
            return self

        def cleanup_full_snapshot(self) -> "StateTtlConfig.Builder":
            return self

        def cleanup_incrementally(self, cleanup_size: int = 5,
                                  run_cleanup_for_every_record: bool = False) -> "StateTtlConfig.Builder":
            return self

        def cleanup_in_rocksdb_compact_filter(self, query_time_after_num_entries: int = 1000,
                                              *args: Any) -> "StateTtlConfig.Builder":
            return self

        def disable_cleanup_in_background(self) -> "StateTtlConfig.Builder":
            return self

        def build(self) -> "StateTtlConfig":
            return StateTtlConfig(self._ttl, self._update_type, self._visibility)


class StateDescriptor:
    """Names a piece of keyed state; type information is accepted and ignored."""

    def __init__(self, name: str, type_info: Any = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a state descriptor needs a non-empty name, got {name!r}")
        self.name = name
        self.type_info = type_info
        self.ttl_config: StateTtlConfig | None = None

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        if not isinstance(ttl_config, StateTtlConfig):
            raise TypeError(f"enable_time_to_live needs a StateTtlConfig, got {ttl_config!r}")
        self.ttl_config = ttl_config


class ValueStateDescriptor(StateDescriptor):
    def __init__(self, name: str, value_type_info: Any = None) -> None:
        super().__init__(name, value_type_info)


class ListStateDescriptor(StateDescriptor):
    def __init__(self, name: str, elem_type_info: Any = None) -> None:
        super().__init__(name, elem_type_info)


class MapStateDescriptor(StateDescriptor):
    def __init__(self, name: str, key_type_info: Any = None, value_type_info: Any = None) -> None:
        super().__init__(name, (key_type_info, value_type_info))


def _reducer(fn: Any) -> Callable[[Any, Any], Any]:
    reduce = getattr(fn, "reduce", None)
    if callable(reduce):
        return reduce
    if callable(fn):
        return fn
    raise TypeError(f"expected a ReduceFunction or a callable, got {fn!r}")


class ReducingStateDescriptor(StateDescriptor):
    def __init__(self, name: str, reduce_function: Any, type_info: Any = None) -> None:
        super().__init__(name, type_info)
        self.reduce_function = reduce_function
        #: the reduce function as a plain callable
        self.reducer = _reducer(reduce_function)


class AggregatingStateDescriptor(StateDescriptor):
    def __init__(self, name: str, agg_function: Any, state_type_info: Any = None) -> None:
        super().__init__(name, state_type_info)
        for method in ("create_accumulator", "add", "get_result"):
            if not callable(getattr(agg_function, method, None)):
                raise TypeError("AggregatingStateDescriptor needs an AggregateFunction, "
                                f"got {agg_function!r}")
        self.agg_function = agg_function


class KeyedStateStore:
    """Where a RuntimeContext gets keyed state (Flink's KeyedStateStore); the runtime's
    ``KeyedStateBackend`` implements it. ``current_key`` scopes every state object it gives."""

    current_key: Any = None

    def get_state(self, descriptor: ValueStateDescriptor) -> "ValueState":
        raise NotImplementedError

    def get_list_state(self, descriptor: ListStateDescriptor) -> "ListState":
        raise NotImplementedError

    def get_map_state(self, descriptor: MapStateDescriptor) -> "MapState":
        raise NotImplementedError

    def get_reducing_state(self, descriptor: ReducingStateDescriptor) -> "ReducingState":
        raise NotImplementedError

    def get_aggregating_state(self, descriptor: AggregatingStateDescriptor) -> "AggregatingState":
        raise NotImplementedError


class State:
    """State scoped to the backend's current key."""

    __slots__ = ("_backend", "_table")

    def __init__(self, backend: KeyedStateStore, table: dict[Any, Any]) -> None:
        self._backend = backend
        self._table = table

    def clear(self) -> None:
        self._table.pop(self._backend.current_key, None)


class ValueState(State):
    __slots__ = ()

    def value(self) -> Any:
        """The current key's value, None if none was set."""
        return self._table.get(self._backend.current_key)

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
        else:
            self._table[self._backend.current_key] = value


class ListState(State):
    __slots__ = ()

    def get(self) -> Iterable[Any]:
        return list(self._table.get(self._backend.current_key, ()))

    def add(self, value: Any) -> None:
        if value is None:
            raise ValueError("You cannot add null to a ListState.")
        key = self._backend.current_key
        values = self._table.get(key)
        if values is None:
            self._table[key] = [value]
        else:
            values.append(value)

    def add_all(self, values: Iterable[Any]) -> None:
        values = list(values)
        if any(v is None for v in values):
            raise ValueError("You cannot add null to a ListState.")
        if values:
            self._table.setdefault(self._backend.current_key, []).extend(values)

    def update(self, values: Iterable[Any]) -> None:
        values = list(values)
        if any(v is None for v in values):
            raise ValueError("You cannot add null to a ListState.")
        if values:
            self._table[self._backend.current_key] = values
        else:
            self.clear()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())


class MapState(State):
    __slots__ = ()

    def _map(self, create: bool = False) -> dict[Any, Any]:
        key = self._backend.current_key
        m = self._table.get(key)
        if m is None:
            m = {}
            if create:
                self._table[key] = m
        return m

    def get(self, key: Any) -> Any:
        return self._map().get(key)

    def put(self, key: Any, value: Any) -> None:
        self._map(True)[key] = value

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        self._map(True).update(dict_value)

    def remove(self, key: Any) -> None:
        m = self._map()
        m.pop(key, None)
        if not m:
            self.clear()

    def contains(self, key: Any) -> bool:
        return key in self._map()

    def items(self) -> Iterable[tuple[Any, Any]]:
        return list(self._map().items())

    def keys(self) -> Iterable[Any]:
        return list(self._map().keys())

    def values(self) -> Iterable[Any]:
        return list(self._map().values())

    def is_empty(self) -> bool:
        return not self._map()

    def __getitem__(self, key: Any) -> Any:
        return self.get(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())


class ReducingState(State):
    __slots__ = ("_reduce",)

    def __init__(self, backend: KeyedStateStore, table: dict[Any, Any],
                 reduce: Callable[[Any, Any], Any]) -> None:
        super().__init__(backend, table)
        self._reduce = reduce

    def get(self) -> Any:
        return self._table.get(self._backend.current_key)

    def add(self, value: Any) -> None:
        key = self._backend.current_key
        table = self._table
        if key in table:
            table[key] = self._reduce(table[key], value)
        else:
            table[key] = value


class AggregatingState(State):
    __slots__ = ("_agg",)

    def __init__(self, backend: KeyedStateStore, table: dict[Any, Any], agg: Any) -> None:
        super().__init__(backend, table)
        self._agg = agg

    def get(self) -> Any:
        key = self._backend.current_key
        if key not in self._table:
            return None
        return self._agg.get_result(self._table[key])

    def add(self, value: Any) -> None:
        key = self._backend.current_key
        table = self._table
        acc = table[key] if key in table else self._agg.create_accumulator()
        table[key] = self._agg.add(value, acc)

    def add_accumulator(self, accumulator: Any) -> None:
        """Fold an accumulator of the same AggregateFunction in with its ``merge`` (a window's
        partial aggregated before the shuffle)."""
        key = self._backend.current_key
        table = self._table
        table[key] = self._agg.merge(table[key], accumulator) if key in table else accumulator
