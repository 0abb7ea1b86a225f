"""Keyed state with PyFlink's names: descriptors, the state objects a rich function gets from
its RuntimeContext, and the per-key store behind them.

In BATCH mode an operator sees the records of one key together (Flink sorts its keyed input),
so the store keeps the current key's state and drops it when the operator moves to the next
key: state never outlives its key, and memory holds one key's state at a time.

>>> class Count(KeyedProcessFunction):                           # doctest: +SKIP
...     def open(self, runtime_context):
...         self.n = runtime_context.get_state(ValueStateDescriptor("n", Types.LONG()))
...     def process_element(self, value, ctx):
...         self.n.update((self.n.value() or 0) + 1)
...         yield ctx.get_current_key(), self.n.value()
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

#: Flink's message for keyed state outside a keyed stream
NOT_KEYED = ("Keyed state can only be used on a 'keyed stream', i.e., after a 'keyBy()' "
             "operation.")


class StateTtlConfig:
    """Time-to-live of keyed state (accepted; in BATCH mode state lives only as long as its key)."""

    class UpdateType:
        Disabled, OnCreateAndWrite, OnReadAndWrite = range(3)

    class StateVisibility:
        ReturnExpiredIfNotCleanedUp, NeverReturnExpired = range(2)

    class TtlTimeCharacteristic:
        ProcessingTime = 0

    def __init__(self, ttl: Any, update_type: int = 1, visibility: int = 1) -> None:
        self.ttl = ttl
        self.update_type = update_type
        self.visibility = visibility

    @staticmethod
    def new_builder(ttl: Any) -> "StateTtlConfig.Builder":
        return StateTtlConfig.Builder(ttl)

    class Builder:
        def __init__(self, ttl: Any) -> None:
            self._config = StateTtlConfig(ttl)

        def set_update_type(self, update_type: int) -> "StateTtlConfig.Builder":
            self._config.update_type = update_type
            return self

        def update_ttl_on_create_and_write(self) -> "StateTtlConfig.Builder":
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> "StateTtlConfig.Builder":
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(self, visibility: int) -> "StateTtlConfig.Builder":
            self._config.visibility = visibility
            return self

        def never_return_expired(self) -> "StateTtlConfig.Builder":
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def return_expired_if_not_cleaned_up(self) -> "StateTtlConfig.Builder":
            return self.set_state_visibility(
                StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)

        def set_ttl_time_characteristic(self, characteristic: int) -> "StateTtlConfig.Builder":
            return self

        def set_ttl(self, ttl: Any) -> "StateTtlConfig.Builder":
            self._config.ttl = ttl
            return self

        def cleanup_full_snapshot(self) -> "StateTtlConfig.Builder":
            return self

        def cleanup_incrementally(self, *args: Any) -> "StateTtlConfig.Builder":
            return self

        def cleanup_in_rocksdb_compact_filter(self, *args: Any) -> "StateTtlConfig.Builder":
            return self

        def disable_cleanup_in_background(self) -> "StateTtlConfig.Builder":
            return self

        def build(self) -> "StateTtlConfig":
            return self._config


class StateDescriptor:
    """Names a piece of keyed state; type information is accepted (and not needed)."""

    def __init__(self, name: str, type_info: Any = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("a state descriptor needs a name")
        self.name = name
        self.type_info = type_info
        self.ttl_config: StateTtlConfig | None = None

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
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


class ReducingStateDescriptor(StateDescriptor):
    def __init__(self, name: str, reduce_function: Any, type_info: Any = None) -> None:
        super().__init__(name, type_info)
        from .functions import as_callable

        self.reduce_function = as_callable(reduce_function)


class AggregatingStateDescriptor(StateDescriptor):
    def __init__(self, name: str, agg_function: Any, state_type_info: Any = None) -> None:
        super().__init__(name, state_type_info)
        for method in ("create_accumulator", "add", "get_result"):
            if not callable(getattr(agg_function, method, None)):
                raise TypeError(f"an AggregatingStateDescriptor needs an AggregateFunction, "
                                f"not {agg_function!r}")
        self.agg_function = agg_function


class KeyedStateStore:
    """The state of the operator's current key, by descriptor name."""

    def __init__(self) -> None:
        self.current_key: Any = None
        self.keyed = False
        self._values: dict[str, Any] = {}

    def set_current_key(self, key: Any) -> None:
        """Move to ``key``: the previous key's state is gone (BATCH: a key is seen once)."""
        self.keyed = True
        self.current_key = key
        self._values.clear()

    def get(self, name: str, default: Callable[[], Any] | None = None) -> Any:
        if not self.keyed:
            raise RuntimeError(NOT_KEYED)
        if name not in self._values and default is not None:
            self._values[name] = default()
        return self._values.get(name)

    def put(self, name: str, value: Any) -> None:
        if not self.keyed:
            raise RuntimeError(NOT_KEYED)
        self._values[name] = value

    def remove(self, name: str) -> None:
        self._values.pop(name, None)


class State:
    """One piece of keyed state, scoped to the current key."""

    def __init__(self, store: KeyedStateStore, descriptor: StateDescriptor) -> None:
        self._store = store
        self._name = descriptor.name
        self._descriptor = descriptor

    def clear(self) -> None:
        self._store.remove(self._name)


class ValueState(State):
    def value(self) -> Any:
        return self._store.get(self._name)

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
        else:
            self._store.put(self._name, value)


class ListState(State):
    def _list(self) -> list[Any]:
        return self._store.get(self._name, list)

    def get(self) -> Iterable[Any]:
        return list(self._store.get(self._name) or [])

    def add(self, value: Any) -> None:
        self._list().append(value)

    def add_all(self, values: Iterable[Any]) -> None:
        self._list().extend(values)

    def update(self, values: Iterable[Any]) -> None:
        self._store.put(self._name, list(values))

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())


class MapState(State):
    def _map(self) -> dict[Any, Any]:
        return self._store.get(self._name, dict)

    def get(self, key: Any) -> Any:
        return (self._store.get(self._name) or {}).get(key)

    def put(self, key: Any, value: Any) -> None:
        self._map()[key] = value

    def put_all(self, mapping: dict[Any, Any]) -> None:
        self._map().update(mapping)

    def remove(self, key: Any) -> None:
        (self._store.get(self._name) or {}).pop(key, None)

    def contains(self, key: Any) -> bool:
        return key in (self._store.get(self._name) or {})

    def items(self) -> Iterable[tuple[Any, Any]]:
        return list((self._store.get(self._name) or {}).items())

    def keys(self) -> Iterable[Any]:
        return list(self._store.get(self._name) or {})

    def values(self) -> Iterable[Any]:
        return list((self._store.get(self._name) or {}).values())

    def is_empty(self) -> bool:
        return not self._store.get(self._name)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)


class ReducingState(State):
    def get(self) -> Any:
        return self._store.get(self._name)

    def add(self, value: Any) -> None:
        current = self._store.get(self._name)
        reduce = self._descriptor.reduce_function  # type: ignore[attr-defined]
        self._store.put(self._name, value if current is None else reduce(current, value))


class AggregatingState(State):
    def get(self) -> Any:
        acc = self._store.get(self._name)
        return None if acc is None else self._descriptor.agg_function.get_result(acc)  # type: ignore[attr-defined]

    def add(self, value: Any) -> None:
        agg = self._descriptor.agg_function  # type: ignore[attr-defined]
        acc = self._store.get(self._name)
        if acc is None:
            acc = agg.create_accumulator()
        self._store.put(self._name, agg.add(value, acc))


_KINDS: dict[type, type[State]] = {ValueStateDescriptor: ValueState, ListStateDescriptor: ListState,
                                   MapStateDescriptor: MapState, ReducingStateDescriptor: ReducingState,
                                   AggregatingStateDescriptor: AggregatingState}


def state_for(store: KeyedStateStore | None, descriptor: StateDescriptor,
              expected: type[StateDescriptor]) -> State:
    """The state object of ``descriptor`` (which must be an ``expected``) on ``store``."""
    if store is None:
        raise RuntimeError(NOT_KEYED)
    if not isinstance(descriptor, expected):
        raise TypeError(f"expected a {expected.__name__}, got {type(descriptor).__name__}")
    kind = next(k for d, k in _KINDS.items() if isinstance(descriptor, d))
    return kind(store, descriptor)
