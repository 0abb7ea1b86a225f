"""The StreamGraph: the program as the user wrote it, one StreamNode per operator.

It lives in the client and still holds the user's function objects. ``jobgraph.build_job_graph``
turns it into a JobGraph (operators chained, functions replaced by BlobServer keys).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable


class ChainingStrategy(str, enum.Enum):
    """Flink's ChainingStrategy: ALWAYS chains both ways, HEAD starts a chain, NEVER neither."""

    ALWAYS = "ALWAYS"
    HEAD = "HEAD"
    NEVER = "NEVER"


class Partitioning(str, enum.Enum):
    """How records travel over a StreamEdge / JobEdge (Flink's ship strategies)."""

    FORWARD = "FORWARD"
    HASH = "HASH"
    REBALANCE = "REBALANCE"
    #: each record to a random subtask
    SHUFFLE = "SHUFFLE"
    #: round-robin over the subset of the next subtasks that this subtask feeds (pointwise)
    RESCALE = "RESCALE"
    #: each record to every subtask
    BROADCAST = "BROADCAST"
    #: each record to the subtask a user's Partitioner names by its key
    CUSTOM = "CUSTOM"

    @property
    def spreads(self) -> bool:
        """True for the exchanges that send records without a key (all but FORWARD, HASH)."""
        return self not in (Partitioning.FORWARD, Partitioning.HASH)


class OperatorKind(str, enum.Enum):
    SOURCE_COLLECTION = "source_collection"
    SOURCE_TEXT_FILE = "source_text_file"
    SOURCE_SPARK = "source_spark"
    #: an unbounded or generated source of STREAMING mode (socket, rate, number sequence)
    SOURCE_STREAM = "source_stream"
    #: the rows of an unbounded Table's query (``to_data_stream`` / ``to_changelog_stream`` in
    #: STREAMING): its config carries the query, planned on the JobManager
    SOURCE_TABLE = "source_table"
    MAP = "map"
    FLAT_MAP = "flat_map"
    FILTER = "filter"
    REDUCE = "reduce"
    PROCESS = "process"
    SINK_COLLECT = "sink_collect"
    SINK_PRINT = "sink_print"
    SINK_TEXT = "sink_text"
    SINK_VIEW = "sink_view"

    @property
    def is_source(self) -> bool:
        return self in (OperatorKind.SOURCE_COLLECTION, OperatorKind.SOURCE_TEXT_FILE,
                        OperatorKind.SOURCE_SPARK, OperatorKind.SOURCE_STREAM,
                        OperatorKind.SOURCE_TABLE)

    @property
    def is_sink(self) -> bool:
        return self in (OperatorKind.SINK_COLLECT, OperatorKind.SINK_PRINT, OperatorKind.SINK_TEXT,
                        OperatorKind.SINK_VIEW)

    @property
    def takes_keys(self) -> bool:
        """Operators that consume (key, record) pairs after a HASH exchange."""
        return self in (OperatorKind.REDUCE, OperatorKind.PROCESS)


#: The name Flink gives an operator of each kind when the user gives none.
DEFAULT_NAMES = {
    OperatorKind.SOURCE_COLLECTION: "Source: Collection Source",
    OperatorKind.SOURCE_TEXT_FILE: "Source: Text File",
    OperatorKind.SOURCE_SPARK: "Source: Spark SQL",
    OperatorKind.SOURCE_STREAM: "Source: Stream",
    OperatorKind.SOURCE_TABLE: "Source: Table",
    OperatorKind.MAP: "Map",
    OperatorKind.FLAT_MAP: "FlatMap",
    OperatorKind.FILTER: "Filter",
    OperatorKind.REDUCE: "Keyed Reduce",
    OperatorKind.PROCESS: "Process",
    OperatorKind.SINK_COLLECT: "Sink: Collect",
    OperatorKind.SINK_PRINT: "Sink: Print to Std. Out",
    OperatorKind.SINK_TEXT: "Sink: Text File",
    OperatorKind.SINK_VIEW: "Sink: Temporary View",
}


@dataclass(eq=False)
class StreamEdge:
    source: "StreamNode"
    target: "StreamNode"
    partitioning: Partitioning
    #: for HASH: the user's key selector
    key_selector: Callable[[Any], Any] | None = None
    #: True when the user asked for this partitioning (``rebalance()``), not the default
    explicit: bool = False
    #: the side output (OutputTag's tag_id) of ``source`` this edge carries; None: the main output
    side_output: str | None = None
    #: into a two-input operator (``connect``): which input, 0 or 1; None: a one-input operator
    input_index: int | None = None


@dataclass(eq=False)
class StreamNode:
    node_id: int
    kind: OperatorKind
    name: str
    #: the user's function (or rich function object); for a collection source, the data
    function: Any = None
    parallelism: int | None = None
    slot_sharing_group: str = "default"
    chaining: ChainingStrategy = ChainingStrategy.ALWAYS
    uid: str | None = None
    #: plain settings of built-in operators (a file path, a query, a record limit)
    config: dict[str, Any] = field(default_factory=dict)
    inputs: list[StreamEdge] = field(default_factory=list)
    outputs: list[StreamEdge] = field(default_factory=list)


class StreamGraph:
    """The nodes and edges of one program, in the order they were added."""

    def __init__(self) -> None:
        self.nodes: list[StreamNode] = []
        self.chaining_enabled = True
        self.default_parallelism = 1

    def add_node(self, kind: OperatorKind, function: Any = None, name: str | None = None,
                 parallelism: int | None = None,
                 chaining: ChainingStrategy = ChainingStrategy.ALWAYS) -> StreamNode:
        node = StreamNode(len(self.nodes), kind, name or DEFAULT_NAMES[kind], function,
                          parallelism, chaining=chaining)
        if function is not None and hasattr(function, "user_functions"):
            # which operator a PROCESS node runs, readable without unpickling its code
            node.config["operator_class"] = type(function).__name__
        self.nodes.append(node)
        return node

    def add_edge(self, source: StreamNode, target: StreamNode,
                 partitioning: Partitioning = Partitioning.FORWARD,
                 key_selector: Callable[[Any], Any] | None = None,
                 explicit: bool = False, side_output: str | None = None,
                 input_index: int | None = None) -> StreamEdge:
        edge = StreamEdge(source, target, partitioning, key_selector, explicit, side_output,
                          input_index)
        if source.config.get("timestamped"):
            target.config["timestamped"] = True  # event-time timestamps travel with the records
        source.outputs.append(edge)
        target.inputs.append(edge)
        return edge

    def parallelism_of(self, node: StreamNode) -> int:
        """The node's own parallelism, else its input's for a sink, else the default."""
        if node.parallelism:
            return node.parallelism
        if node.kind.is_sink and node.inputs:
            return self.parallelism_of(node.inputs[0].source)
        return self.default_parallelism

    def nodes_of(self, sinks: list[StreamNode],
                 cached: frozenset[str] = frozenset()) -> list[StreamNode]:
        """Every node that one of ``sinks`` depends on, once, sources first."""
        nodes: list[StreamNode] = []
        seen: set[int] = set()
        for sink in sinks:
            for node in self.upstream_of(sink, cached):
                if node.node_id not in seen:
                    seen.add(node.node_id)
                    nodes.append(node)
        return nodes

    def upstream_of(self, sink: StreamNode, cached: frozenset[str] = frozenset()) -> list[StreamNode]:
        """Every node that ``sink`` depends on, sources first (topological order); a node whose
        stream is cached in the session (its ``cache_id`` in ``cached``) is read from the cache,
        so its own inputs are not needed."""
        seen: set[int] = set()
        order: list[StreamNode] = []

        def visit(node: StreamNode) -> None:
            if node.node_id in seen:
                return
            seen.add(node.node_id)
            if node.config.get("cache_id") not in cached:
                for edge in node.inputs:
                    visit(edge.source)
            order.append(node)

        visit(sink)
        return order
