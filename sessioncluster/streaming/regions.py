"""Regions of the STREAMING runtime: the stateless vertices after one stage's root run in one
``mapInArrow`` (:class:`RegionFunction`), so that a stream fanned out to several of them is
computed once; each row says which vertex (``node``) made it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from . import report as reports
from .runtime import ChainTask, Rows, VertexProgram, loads, user_code_environment

#: the Arrow schema of a region's rows: records with the ``node`` of the vertex that made them
REGION_SCHEMA = "node int, out int, k binary, ts long, v binary"
#: the ``node`` of a region's input: its stage's root
ROOT_NODE = -1


@dataclass(slots=True)
class RegionVertex:
    """A stateless vertex run in a region (``RegionFunction``)."""

    #: the ``node`` of its rows
    node: int
    program: VertexProgram
    #: what it reads: (the producer's node, or ``ROOT_NODE``; the producer's output edge)
    inputs: list[tuple[int, int]]
    #: its output edges read inside the region: their rows stay in the worker
    internal: frozenset[int] = frozenset()


class RegionFunction:
    """``mapInArrow`` of a stage's region: the stateless vertices that read only its root's
    stream, run in one Python task in topological order, each fed the rows of its producers.
    A stream fanned out (several consumers, side outputs, sinks) is computed once: a Spark plan is
    a tree, and consumers in DataFrames of their own would each compute their producer again."""

    def __init__(self, vertices: list[RegionVertex]) -> None:
        self.vertices = vertices

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        with reports.reporting(), user_code_environment(self.vertices[0].program):
            tasks = [(rv, ChainTask(rv.program)) for rv in self.vertices]
            for batch in batches:
                produced = {ROOT_NODE: (batch.column("out").to_pylist(), batch.column("ts").to_pylist(),
                                        batch.column("v").to_pylist())}
                node: list[int] = []
                out = Rows()
                for rv, task in tasks:
                    rows = task.process(_picked(produced, rv.inputs, rv.program.timestamped_input))
                    produced[rv.node] = (rows.out, rows.ts, rows.v)
                    if not rv.internal:
                        node += [rv.node] * len(rows)
                        out.out += rows.out
                        out.k += rows.k
                        out.ts += rows.ts
                        out.v += rows.v
                        continue
                    for o, k, ts, v in zip(rows.out, rows.k, rows.ts, rows.v):
                        if o not in rv.internal:
                            node.append(rv.node)
                            out.out.append(o)
                            out.k.append(k)
                            out.ts.append(ts)
                            out.v.append(v)
                if node:
                    records = out.arrow()
                    yield pa.RecordBatch.from_arrays([pa.array(node, pa.int32()), *records.columns],
                                                     ["node", *records.schema.names])


def _picked(produced: dict[int, tuple[list[int], list[int | None], list[bytes]]],
            inputs: list[tuple[int, int]], timestamped: bool) -> Iterator[Any]:
    """The records a region's vertex reads from the rows its producers made."""
    for producer, edge in inputs:
        outs, stamps, values = produced[producer]
        if outs.count(edge) == len(outs):  # all of them (the common case): no test per row
            yield from zip(stamps, map(loads, values)) if timestamped else map(loads, values)
            continue
        for o, ts, v in zip(outs, stamps, values):
            if o == edge:
                yield (ts, loads(v)) if timestamped else loads(v)
