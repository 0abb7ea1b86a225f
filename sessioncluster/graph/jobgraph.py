"""The JobGraph: JobVertices (operator chains), IntermediateDataSets and JobEdges.

Built in the client from a StreamGraph with Flink's chaining rules, and sent to the Dispatcher.
It holds no user objects: every function and every collection is a BlobServer key (SHA-256).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

from ..common.execution_mode import RuntimeExecutionMode
from .streamgraph import ChainingStrategy, OperatorKind, Partitioning, StreamEdge, StreamGraph, StreamNode


@dataclass(slots=True)
class OperatorSpec:
    """One operator inside a chain; ``function_key`` names its user code in the BlobServer."""

    operator_id: int
    kind: OperatorKind
    name: str
    function_key: str | None = None
    uid: str | None = None
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class JobEdge:
    """Connects the IntermediateDataSet produced by ``source`` to the consumer ``target``."""

    source: str
    target: str
    ship_strategy: Partitioning
    key_selector_key: str | None = None
    #: for a HASH edge into a reduce: the reduce function, combined map-side before the shuffle
    combiner_key: str | None = None
    #: the side output (OutputTag's tag_id) of the source it carries; None: the main output
    side_output: str | None = None
    #: into a two-input vertex (``connect``): which input, 0 or 1; None: a one-input vertex
    input_index: int | None = None
    #: BATCH: a HASH edge into a window that pre-aggregates (``combiner_key`` is the window
    #: operator): the source sends one partial per (key, window), the window combines them
    window_partials: bool = False
    #: STREAMING: the same (a subset of ``window_partials``: ``WindowOperator.
    #: pre_aggregates_in_streaming``); the STREAMING runtime reads this, not ``window_partials``
    window_partials_streaming: bool = False

    @property
    def intermediate_dataset_id(self) -> str:
        return f"{self.source}->{self.target}"


@dataclass(slots=True)
class JobVertex:
    vertex_id: str
    name: str
    operators: list[OperatorSpec]
    parallelism: int
    slot_sharing_group: str = "default"
    inputs: list[JobEdge] = field(default_factory=list)
    outputs: list[JobEdge] = field(default_factory=list)

    @property
    def is_source(self) -> bool:
        return self.operators[0].kind.is_source

    @property
    def is_sink(self) -> bool:
        return self.operators[-1].kind.is_sink


@dataclass(slots=True, frozen=True)
class PythonDependency:
    """One dependency of a job, as the JobGraph names it."""

    #: "file" (a module), "zip" (a package directory, zip, wheel or egg: on sys.path),
    #: "archive" (extracted under ``target_dir`` in the working directory), "requirements"
    kind: str
    #: the BlobServer key of its packed bytes
    key: str
    #: what the user gave (a file or directory name), for messages
    name: str
    target_dir: str = ""

    @property
    def directory_name(self) -> str:
        """Where a TaskManager keeps it: its content and the name it goes by (two modules of
        the same text under different names are two directories)."""
        import hashlib

        return hashlib.sha256(f"{self.kind}\0{self.name}\0{self.key}".encode()).hexdigest()[:40]

    def describe(self) -> str:
        what = {"file": "python file", "zip": "python file", "archive": "archive",
                "requirements": "requirements"}[self.kind]
        return f"{what} {self.name}" + (f" (as {self.target_dir}/)" if self.target_dir else "")


@dataclass(slots=True)
class JobGraph:
    job_name: str
    #: in topological order, sources first
    vertices: list[JobVertex]
    #: why each StreamEdge that is not chained was not chained, for explain()
    chaining_notes: list[str] = field(default_factory=list)
    #: what the JobMaster does when the job fails (a RestartStrategyConfiguration; None: no restart)
    restart_strategy: Any = None
    #: BATCH or STREAMING (AUTOMATIC is resolved by the client before submission)
    runtime_mode: RuntimeExecutionMode = RuntimeExecutionMode.BATCH
    #: STREAMING: checkpointing and savepoint settings (``execution.checkpointing.interval`` in ms,
    #: ``state.checkpoints.dir``, ``execution.savepoint.path``, ...), by Flink's option names
    configuration: dict[str, Any] = field(default_factory=dict)
    #: the job's Python files, archives and requirements (each a blob), and the session's
    python_dependencies: list[PythonDependency] = field(default_factory=list)
    #: ``env.get_config().set_global_job_parameters(...)``: ``RuntimeContext.get_job_parameter``
    job_parameters: dict[str, str] = field(default_factory=dict)

    def vertex(self, vertex_id: str) -> JobVertex:
        for v in self.vertices:
            if v.vertex_id == vertex_id:
                return v
        raise KeyError(vertex_id)

    @property
    def edges(self) -> list[JobEdge]:
        return [e for v in self.vertices for e in v.inputs]

    @property
    def blob_keys(self) -> set[str]:
        keys = {op.function_key for v in self.vertices for op in v.operators if op.function_key}
        for e in self.edges:
            keys.update(k for k in (e.key_selector_key, e.combiner_key) if k)
        keys.update(d.key for d in self.python_dependencies)
        return keys

    def explain(self) -> str:
        """The vertices with their chained operators, parallelism and edges, as text."""
        lines = [f"JobGraph '{self.job_name}': {len(self.vertices)} JobVertices"]
        for v in self.vertices:
            lines.append(f"  [{v.vertex_id[:8]}] {v.name}  (parallelism {v.parallelism}"
                         f", slot sharing group '{v.slot_sharing_group}')")
            for op in v.operators:
                lines.append(f"      - {op.name}")
            for e in v.inputs:
                src = self.vertex(e.source)
                lines.append(f"      <- {e.ship_strategy.value} from [{src.vertex_id[:8]}] {src.name}")
        if self.chaining_notes:
            lines.append("Not chained:")
            lines.extend(f"  {note}" for note in self.chaining_notes)
        return "\n".join(lines)


def chaining_veto(edge: StreamEdge, graph: StreamGraph,
                  in_job: set[int] | None = None) -> str | None:
    """Why ``edge`` cannot be chained under Flink's rules, or ``None`` if it can.

    ``in_job`` limits the count of inputs and outputs to the nodes of one job.
    """
    up, down = edge.source, edge.target

    def count(edges: list[StreamEdge], end: str) -> int:
        return sum(1 for e in edges if in_job is None or getattr(e, end).node_id in in_job)

    if not graph.chaining_enabled:
        return "chaining is disabled for the environment"
    if count(down.inputs, "source") != 1:
        return f"'{down.name}' has {count(down.inputs, 'source')} inputs"
    if count(up.outputs, "target") != 1:
        return f"'{up.name}' has {count(up.outputs, 'target')} outputs"
    if edge.side_output is not None:
        return f"side output '{edge.side_output}'"
    if up.config.get("cache_id"):
        return f"'{up.name}' is cached"
    if edge.partitioning is not Partitioning.FORWARD:
        return f"{edge.partitioning.value} partitioning"
    if up.chaining is ChainingStrategy.NEVER:
        return f"chaining is disabled on '{up.name}'"
    if down.chaining is ChainingStrategy.NEVER:
        return f"chaining is disabled on '{down.name}'"
    if down.chaining is ChainingStrategy.HEAD:
        return f"'{down.name}' starts a new chain"
    if up.slot_sharing_group != down.slot_sharing_group:
        return (f"slot sharing groups differ ('{up.slot_sharing_group}' vs "
                f"'{down.slot_sharing_group}')")
    pu, pd = graph.parallelism_of(up), graph.parallelism_of(down)
    if pu != pd:
        return f"parallelism differs ({pu} vs {pd})"
    return None


def build_job_graph(graph: StreamGraph, sinks: list[StreamNode], job_name: str,
                    put_blob: Callable[[Any, str], str],
                    cached: frozenset[str] = frozenset()) -> JobGraph:
    """Chain the operators that ``sinks`` depend on into JobVertices.

    ``put_blob(obj, what)`` serializes a user object (function or collection; ``what`` names it
    in errors) and returns its BlobServer key.
    """
    if not sinks:
        raise ValueError("No operators defined in the program: add a sink "
                         "(execute_and_collect(), print()) before executing")
    nodes = graph.nodes_of(sinks, cached)
    in_job = {n.node_id for n in nodes}

    chain_of: dict[int, list[StreamNode]] = {}  # head node id -> chain
    head_of: dict[int, int] = {}
    notes: list[str] = []
    for node in nodes:
        inputs = [e for e in node.inputs if e.source.node_id in in_job]
        veto = (chaining_veto(inputs[0], graph, in_job) if len(inputs) == 1
                else f"'{node.name}' has {len(inputs)} inputs")
        if inputs and veto is None:
            head = head_of[inputs[0].source.node_id]
            chain_of[head].append(node)
            head_of[node.node_id] = head
        else:
            chain_of[node.node_id] = [node]
            head_of[node.node_id] = node.node_id
            notes.extend(f"'{e.source.name}' -> '{node.name}': {veto}" for e in inputs)

    vertices: dict[int, JobVertex] = {}
    for head_id, chain in chain_of.items():
        ops = []
        for n in chain:
            key = put_blob(n.function, f"'{n.name}'") if n.function is not None else None
            config = dict(n.config)
            if n.config.get("cache_id") in cached:
                config["from_cache"] = True  # read from the session's cache, not run again
            ops.append(OperatorSpec(n.node_id, n.kind, n.name, key, n.uid, config))
        vertex_id = _vertex_id(chain, graph)
        name = " -> ".join(n.name for n in chain)
        vertices[head_id] = JobVertex(vertex_id, name, ops, graph.parallelism_of(chain[0]),
                                      chain[0].slot_sharing_group)
    for head_id, chain in chain_of.items():
        target = vertices[head_id]
        for edge in chain[0].inputs:
            if edge.source.node_id not in in_job:
                continue
            source = vertices[head_of[edge.source.node_id]]
            key_sel = (put_blob(edge.key_selector, f"the key selector of '{chain[0].name}'")
                       if edge.key_selector is not None else None)
            combiner, partials, streaming = _combiner(edge, chain[0], target)
            strategy = edge.partitioning
            if strategy is Partitioning.FORWARD and edge.explicit \
                    and source.parallelism != target.parallelism:
                raise ValueError(
                    "Forward partitioning does not allow change of parallelism. Upstream "
                    f"operation: {edge.source.name}-{edge.source.node_id + 1} parallelism: "
                    f"{source.parallelism}, downstream operation: {chain[0].name}-"
                    f"{chain[0].node_id + 1} parallelism: {target.parallelism} You must use "
                    "another partitioning strategy, such as broadcast, rebalance, shuffle or "
                    "global.")
            if strategy is Partitioning.FORWARD and (source.parallelism != target.parallelism
                                                     or sum(e.source.node_id in in_job
                                                            for e in chain[0].inputs) > 1):
                # as Flink: FORWARD needs equal parallelism; and the inputs of a union meet in
                # one exchange here (Spark cannot line up several inputs' partitions 1:1)
                strategy = Partitioning.REBALANCE
            job_edge = JobEdge(source.vertex_id, target.vertex_id, strategy, key_sel, combiner,
                               edge.side_output, edge.input_index, partials, streaming)
            target.inputs.append(job_edge)
            source.outputs.append(job_edge)
    order = [vertices[head_of[n.node_id]] for n in nodes if head_of[n.node_id] == n.node_id]
    _window_partials_all_or_none(order)
    return JobGraph(job_name, order, notes)


def _combiner(edge: StreamEdge, head: StreamNode, target: JobVertex
              ) -> tuple[str | None, bool, bool]:
    """How the records of ``edge`` into ``head``'s vertex are combined before the shuffle:
    (the combining function's key, window partials in BATCH, window partials in STREAMING)."""
    if edge.input_index is not None:  # the two inputs of a connect are never combined
        return None, False, False
    if edge.partitioning is Partitioning.HASH and head.kind is OperatorKind.REDUCE:
        return target.operators[0].function_key, False, False
    if edge.partitioning is Partitioning.HASH and head.kind is OperatorKind.PROCESS \
            and getattr(head.function, "pre_aggregates_in_batch", False) is True:
        return (target.operators[0].function_key, True,
                getattr(head.function, "pre_aggregates_in_streaming", False) is True)
    return None, False, False


def _window_partials_all_or_none(vertices: list[JobVertex]) -> None:
    """A window takes partials over every input or over none: a source read by several
    consumers (fan-out, side outputs) hands its records on one at a time, never pre-aggregated."""
    by_id = {v.vertex_id: v for v in vertices}
    for v in vertices:
        edges = v.inputs
        if any(e.window_partials for e in edges) and not all(
                e.window_partials and len(by_id[e.source].outputs) == 1 for e in edges):
            for e in edges:
                e.combiner_key, e.window_partials, e.window_partials_streaming = None, False, False


def _vertex_id(chain: list[StreamNode], graph: StreamGraph) -> str:
    """A deterministic id from the chain's position and operators, as Flink hashes its graph."""
    h = hashlib.sha256()
    for n in chain:
        h.update(f"{n.node_id}|{n.kind.value}|{n.name}|{n.uid}|{graph.parallelism_of(n)};".encode())
    return h.hexdigest()[:32]
