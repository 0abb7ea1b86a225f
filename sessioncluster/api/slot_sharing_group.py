"""PyFlink's ``MemorySize`` and ``SlotSharingGroup`` (``pyflink.datastream.slot_sharing_group``).

A SlotSharingGroup names the group an operator's subtasks share slots in
(``DataStream.slot_sharing_group``); its resources (CPU cores, memory, external resources) are
kept and checked as Flink's builder checks them, but not reserved: Spark schedules the tasks.
"""

from __future__ import annotations

from functools import total_ordering

#: Java's MemorySize.toString units: the text is in the unit before the first that does not
#: divide the size (bytes when all do, as for 0 or whole tebibytes)
_UNITS = (("bytes", 1), ("kb", 1 << 10), ("mb", 1 << 20), ("gb", 1 << 30), ("tb", 1 << 40))


@total_ordering
class MemorySize:
    """A number of bytes, viewable in different units."""

    def __init__(self, j_memory_size: None = None, bytes_size: int = 0) -> None:
        if bytes_size < 0:
            raise ValueError("bytes must be >= 0")
        self._bytes = int(bytes_size)

    @staticmethod
    def of_mebi_bytes(mebi_bytes: int) -> "MemorySize":
        return MemorySize(bytes_size=mebi_bytes << 20)

    def get_bytes(self) -> int:
        return self._bytes

    def get_kibi_bytes(self) -> int:
        return self._bytes >> 10

    def get_mebi_bytes(self) -> int:
        return self._bytes >> 20

    def get_gibi_bytes(self) -> int:
        return self._bytes >> 30

    def get_tebi_bytes(self) -> int:
        return self._bytes >> 40

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemorySize) and self._bytes == other._bytes

    def __lt__(self, other: "MemorySize") -> bool:
        if not isinstance(other, MemorySize):
            raise TypeError(f"Does not support comparison with non-MemorySize {other}")
        return self._bytes < other._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __str__(self) -> str:
        index = next((i for i, (_, m) in enumerate(_UNITS) if self._bytes % m), 0)
        label, multiplier = _UNITS[index - 1] if index else _UNITS[0]
        return f"{self._bytes // multiplier} {label}"

    def __repr__(self) -> str:
        return f"MemorySize({self})"


class SlotSharingGroup:
    """A slot sharing group's name and resources (``SlotSharingGroup.builder(name)...build()``)."""

    def __init__(self, name: str, cpu_cores: float | None = None,
                 task_heap_memory: MemorySize | None = None,
                 task_off_heap_memory: MemorySize | None = None,
                 managed_memory: MemorySize | None = None,
                 external_resources: dict[str, float] | None = None) -> None:
        self._name = name
        self._cpu_cores = cpu_cores
        self._task_heap_memory = task_heap_memory
        self._task_off_heap_memory = task_off_heap_memory
        self._managed_memory = managed_memory
        self._external_resources = dict(external_resources or {})

    def get_name(self) -> str:
        return self._name

    def get_managed_memory(self) -> MemorySize | None:
        return self._managed_memory

    def get_task_heap_memory(self) -> MemorySize | None:
        return self._task_heap_memory

    def get_task_off_heap_memory(self) -> MemorySize | None:
        return self._task_off_heap_memory

    def get_cpu_cores(self) -> float | None:
        return self._cpu_cores

    def get_external_resources(self) -> dict[str, float]:
        return dict(self._external_resources)

    @staticmethod
    def builder(name: str) -> "SlotSharingGroup.Builder":
        return SlotSharingGroup.Builder(name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SlotSharingGroup) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(self._name)

    class Builder:
        """Flink's ``SlotSharingGroup.Builder``: CPU cores and task heap memory are required
        once any resource is given."""

        def __init__(self, name: str) -> None:
            self._name = name
            self._cpu_cores: float | None = None
            self._memory: dict[str, MemorySize] = {}
            self._external: dict[str, float] = {}

        def set_cpu_cores(self, cpu_cores: float) -> "SlotSharingGroup.Builder":
            if cpu_cores <= 0:
                raise ValueError("The cpu cores should be positive.")
            self._cpu_cores = float(cpu_cores)
            return self

        def _set(self, which: str, size: MemorySize, text: str) -> "SlotSharingGroup.Builder":
            if which == "heap" and size.get_bytes() <= 0:
                raise ValueError(f"The {text} should be positive.")
            self._memory[which] = size
            return self

        def set_task_heap_memory(self, task_heap_memory: MemorySize) -> "SlotSharingGroup.Builder":
            return self._set("heap", task_heap_memory, "task heap memory")

        def set_task_heap_memory_mb(self, task_heap_memory_mb: int) -> "SlotSharingGroup.Builder":
            return self.set_task_heap_memory(MemorySize.of_mebi_bytes(task_heap_memory_mb))

        def set_task_off_heap_memory(self, task_off_heap_memory: MemorySize
                                     ) -> "SlotSharingGroup.Builder":
            return self._set("off_heap", task_off_heap_memory, "task off-heap memory")

        def set_task_off_heap_memory_mb(self, task_off_heap_memory_mb: int
                                        ) -> "SlotSharingGroup.Builder":
            return self.set_task_off_heap_memory(MemorySize.of_mebi_bytes(task_off_heap_memory_mb))

        def set_managed_memory(self, managed_memory: MemorySize) -> "SlotSharingGroup.Builder":
            return self._set("managed", managed_memory, "managed memory")

        def set_managed_memory_mb(self, managed_memory_mb: int) -> "SlotSharingGroup.Builder":
            return self.set_managed_memory(MemorySize.of_mebi_bytes(managed_memory_mb))

        def set_external_resource(self, name: str, value: float) -> "SlotSharingGroup.Builder":
            self._external[name] = float(value)
            return self

        def build(self) -> "SlotSharingGroup":
            specified = self._cpu_cores is not None or self._memory or self._external
            if specified and (self._cpu_cores is None or "heap" not in self._memory):
                raise ValueError("The cpu cores and task heap memory are required when "
                                 "specifying the resource of a slot sharing group. You need to "
                                 "explicitly configure them with positive value.")
            m = self._memory
            return SlotSharingGroup(self._name, self._cpu_cores, m.get("heap"), m.get("off_heap"),
                                    m.get("managed"), self._external)
