"""The keyed state of one operator instance (Flink's HeapKeyedStateBackend, in dicts).

One table per state name maps a *slot* to the value: the key itself for the key's own state
(Flink's VoidNamespace), or ``NamespacedKey(key, namespace)`` for state scoped to a namespace
(a window's contents, a trigger's or a ProcessWindowFunction's per-window state). A driver sets
the current key, and ``snapshot(key)`` / ``restore(key, data)`` / ``clear(key)`` move one key's
state in and out: BATCH clears a key after its input, STREAMING keeps the snapshot in Spark's
state store between micro-batches.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..api.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    KeyedStateStore,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    State,
    StateDescriptor,
    ValueState,
    ValueStateDescriptor,
)

#: a key's snapshot: {state name: (state class's name, {namespace or None: value})} (a name
#: pickles several times faster than the class; ``restore`` takes the class as well)
KeySnapshot = dict[str, tuple[str | type, dict[Any, Any]]]
_KIND_OF_NAME: dict[str, type] = {cls.__name__: cls for cls in (
    ValueState, ListState, MapState, ReducingState, AggregatingState)}


class NamespacedKey(tuple):
    """The slot of a key's state in a namespace: ``(key, namespace)``."""

    __slots__ = ()

    def __new__(cls, key: Any, namespace: Any) -> "NamespacedKey":
        return tuple.__new__(cls, (key, namespace))

    def __getnewargs__(self) -> tuple[Any, Any]:
        return (self[0], self[1])


def namespaced(key: Any, namespace: Any) -> NamespacedKey:
    """``NamespacedKey(key, namespace)`` without its Python-level ``__new__`` (a hot path)."""
    return _new_tuple(NamespacedKey, (key, namespace))


_new_tuple = tuple.__new__


class KeyedStateBackend(KeyedStateStore):
    """Tables of keyed state; state objects read and write them at ``current_key``."""

    def __init__(self) -> None:
        #: the slot state objects address: the key, or the key in the current namespace
        self.current_key: Any = None
        self._key: Any = None
        self._tables: dict[str, dict[Any, Any]] = {}
        self._kinds: dict[str, type] = {}

    # -- the current key and namespace -----------------------------------------------------
    def set_current_key(self, key: Any) -> None:
        self._key = self.current_key = key

    def get_current_key(self) -> Any:
        return self._key

    def set_current_namespace(self, namespace: Any) -> None:
        """Scope state to ``namespace`` of the current key (None: the key's own state)."""
        self.current_key = self._key if namespace is None else namespaced(self._key, namespace)

    # -- state objects -----------------------------------------------------------------------
    def table(self, descriptor: StateDescriptor, kind: type) -> dict[Any, Any]:
        """The table of ``descriptor``'s state (made on first use; one kind per name)."""
        if not isinstance(descriptor, StateDescriptor):
            raise TypeError(f"expected a state descriptor, got {descriptor!r}")
        name = descriptor.name
        known = self._kinds.setdefault(name, kind)
        if known is not kind:
            raise ValueError(f"state {name!r} is already registered as a {known.__name__}, "
                             f"not a {kind.__name__}")
        return self._tables.setdefault(name, {})

    def state(self, descriptor: Any, scope: KeyedStateStore | None = None) -> State:
        """The state object of any descriptor, reading its slot from ``scope`` (default: this
        backend's current key; a window's context scopes state to its window)."""
        scope = self if scope is None else scope
        if isinstance(descriptor, ReducingStateDescriptor):
            return ReducingState(scope, self.table(descriptor, ReducingState), descriptor.reducer)
        if isinstance(descriptor, AggregatingStateDescriptor):
            return AggregatingState(scope, self.table(descriptor, AggregatingState),
                                    descriptor.agg_function)
        if isinstance(descriptor, ListStateDescriptor):
            return ListState(scope, self.table(descriptor, ListState))
        if isinstance(descriptor, MapStateDescriptor):
            return MapState(scope, self.table(descriptor, MapState))
        return ValueState(scope, self.table(descriptor, ValueState))

    def get_state(self, descriptor: ValueStateDescriptor) -> ValueState:
        return ValueState(self, self.table(descriptor, ValueState))

    def get_list_state(self, descriptor: ListStateDescriptor) -> ListState:
        return ListState(self, self.table(descriptor, ListState))

    def get_map_state(self, descriptor: MapStateDescriptor) -> MapState:
        return MapState(self, self.table(descriptor, MapState))

    def get_reducing_state(self, descriptor: ReducingStateDescriptor) -> ReducingState:
        if not isinstance(descriptor, ReducingStateDescriptor):
            raise TypeError(f"get_reducing_state needs a ReducingStateDescriptor, got {descriptor!r}")
        return ReducingState(self, self.table(descriptor, ReducingState), descriptor.reducer)

    def get_aggregating_state(self, descriptor: AggregatingStateDescriptor) -> AggregatingState:
        if not isinstance(descriptor, AggregatingStateDescriptor):
            raise TypeError(f"get_aggregating_state needs an AggregatingStateDescriptor, got {descriptor!r}")
        return AggregatingState(self, self.table(descriptor, AggregatingState), descriptor.agg_function)

    def merge_namespaces(self, descriptor: Any, target: Any, sources: Iterable[Any]) -> None:
        """Fold the current key's state of ``descriptor`` in the ``sources`` namespaces into the
        ``target`` namespace (Flink's InternalMergingState.mergeNamespaces): reducing state by its
        reduce function, aggregating state by the AggregateFunction's ``merge``, lists in order."""
        table = self._tables.get(descriptor.name)
        if table is None:
            return
        key = self._key
        slot = NamespacedKey(key, target)
        for source in sources:
            value = table.pop(NamespacedKey(key, source), None)
            if value is None or source == target:
                if value is not None:
                    table[slot] = value
                continue
            if slot not in table:
                table[slot] = value
            elif isinstance(descriptor, ReducingStateDescriptor):
                table[slot] = descriptor.reducer(table[slot], value)
            elif isinstance(descriptor, AggregatingStateDescriptor):
                table[slot] = descriptor.agg_function.merge(table[slot], value)
            else:
                table[slot] = table[slot] + value

    # -- one key in and out ------------------------------------------------------------------
    def snapshot(self, key: Any) -> KeySnapshot | None:
        """The state of ``key`` as picklable data (None: it has none)."""
        out: KeySnapshot = {}
        for name, table in self._tables.items():
            values = {(None if slot == key and type(slot) is not NamespacedKey else slot[1]): value
                      for slot, value in table.items() if _of(slot, key)}
            if values:
                out[name] = (self._kinds[name].__name__, values)
        return out or None

    def restore(self, key: Any, data: KeySnapshot | None) -> None:
        """Put a snapshot of ``key`` back (the tables keep their identity: state objects a
        function made in ``open()`` hold them)."""
        if not data:
            return
        for name, (kind, values) in data.items():
            self._kinds.setdefault(name, _KIND_OF_NAME[kind] if isinstance(kind, str) else kind)
            table = self._tables.setdefault(name, {})
            for namespace, value in values.items():
                table[key if namespace is None else NamespacedKey(key, namespace)] = value

    def take(self, key: Any) -> KeySnapshot | None:
        """``snapshot(key)`` and ``clear(key)`` in one pass (what a STREAMING call ends with)."""
        out: KeySnapshot | None = None
        for name, table in self._tables.items():
            if not table:
                continue
            if len(table) == 1 and key in table and type(next(iter(table))) is not NamespacedKey:
                values = {None: table.pop(key)}  # the common case: the key's own state only
            else:
                values = {}
                for slot in [s for s in table if _of(s, key)]:
                    values[None if type(slot) is not NamespacedKey else slot[1]] = table.pop(slot)
            if values:
                if out is None:
                    out = {}
                out[name] = (self._kinds[name].__name__, values)
        return out

    def clear(self, key: Any) -> None:
        """Forget every state of ``key`` (BATCH: a key's state ends with its input)."""
        # the drivers keep one key at a time in the tables: a scan is short
        for table in self._tables.values():
            if table:
                for slot in [s for s in table if _of(s, key)]:
                    del table[slot]


def _of(slot: Any, key: Any) -> bool:
    if type(slot) is NamespacedKey:
        return bool(slot[0] == key)
    return bool(slot == key)
