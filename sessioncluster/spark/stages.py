"""The shape of a STREAMING job's queries: its vertices in stages (:class:`StagePlan`: one
streaming DataFrame per stage root, the stateless vertices after it in one ``mapInArrow``) and
its sinks in groups that share an upstream vertex (:func:`sink_groups`: one query each). See
:mod:`.streaming`, which builds the DataFrames of this plan."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..graph.jobgraph import JobGraph, JobVertex
from ..streaming.runtime import is_keyed_head, watermark_delay


@dataclass(slots=True)
class StagePlan:
    """The job's vertices in stages, each one streaming DataFrame and its region.

    A stage's root runs on its own: a source, a keyed vertex (its exchange), a vertex with a
    watermark (Spark's watermark is on a DataFrame), or a vertex that reads several stages. Its
    region is the stateless vertices that read only the stage: they run in one ``mapInArrow``
    after the root (``RegionFunction``), so a stream fanned out to them is computed once."""

    #: vertex id -> the vertex id of its stage's root
    stage_of: dict[str, str]
    #: root vertex id -> its region, in topological order
    members: dict[str, list[JobVertex]]
    #: vertex id -> its ``node`` in a region's rows (its index in the graph)
    node: dict[str, int]

    @classmethod
    def of(cls, graph: JobGraph) -> "StagePlan":
        stage_of: dict[str, str] = {}
        members: dict[str, list[JobVertex]] = {}
        for v in topological(graph):
            stages = {stage_of[e.source] for e in v.inputs}
            if (v.operators[0].kind.is_source or is_keyed_head(v) or len(stages) != 1
                    or watermark_delay(v) is not None):
                stage_of[v.vertex_id] = v.vertex_id
                members[v.vertex_id] = []
            else:
                stage = stages.pop()
                stage_of[v.vertex_id] = stage
                members[stage].append(v)
        return cls(stage_of, members, {v.vertex_id: i for i, v in enumerate(graph.vertices)})

    def frame_of(self, vertex_id: str) -> tuple[str, str]:
        """The DataFrame that computes the vertex: ("root" | "region", the stage's root id)."""
        stage = self.stage_of[vertex_id]
        return ("root" if stage == vertex_id else "region", stage)


def by_stage(plan: StagePlan, vertices: list[JobVertex]) -> dict[str, list[str]]:
    """The ids of ``vertices`` by the root of the stage each is in."""
    by_stage: dict[str, list[str]] = {}
    for v in vertices:
        by_stage.setdefault(plan.stage_of[v.vertex_id], []).append(v.vertex_id)
    return by_stage


def topological(graph: JobGraph) -> list[JobVertex]:
    """The graph's vertices, each after its inputs (in the graph's order otherwise)."""
    done: dict[str, JobVertex] = {}

    def visit(v: JobVertex) -> None:
        if v.vertex_id in done:
            return
        for e in v.inputs:
            visit(graph.vertex(e.source))
        done[v.vertex_id] = v

    for v in graph.vertices:
        visit(v)
    return list(done.values())


def sink_groups(graph: JobGraph) -> list[tuple[int, list[JobVertex]]]:
    """The job's sinks in groups that share an upstream vertex, each with the index of its
    first sink (its query's key: ``sink-<index>``, as when each sink was a query of its own).

    Sinks behind different watermarks stay in queries of their own: Spark keeps one watermark
    per query (the minimum of its ``withWatermark``), where Flink's watermark is per operator,
    so one query would hold back the windows and timers of the branch with the earlier one."""
    sinks = [v for v in graph.vertices if v.is_sink]
    position = {v.vertex_id: i for i, v in enumerate(sinks)}
    groups: list[tuple[int, list[JobVertex], set[str], frozenset[str]]] = []
    for i, v in enumerate(sinks):
        above = upstream(graph, v)
        seen = {u.vertex_id for u in above}
        marks = frozenset(u.vertex_id for u in above if watermark_delay(u) is not None)
        joined = [g for g in groups if g[2] & seen and g[3] == marks]
        members = [m for g in joined for m in g[1]] + [v]
        members.sort(key=lambda m: position[m.vertex_id])
        groups = [g for g in groups if all(g is not j for j in joined)]
        groups.append((min([i] + [g[0] for g in joined]), members,
                       seen.union(*(g[2] for g in joined)), marks))
    return [(g[0], g[1]) for g in sorted(groups, key=lambda g: g[0])]


#: how a generated uid (:func:`generated_uid`) begins
GENERATED_UID_PREFIX = "auto-"


def generated_uid(graph: JobGraph, vertex: JobVertex) -> str:
    """The uid of ``vertex``'s head operator when the user gave it none, as Flink generates
    one: a hash of its place in the program (every operator up to it, in the program's order,
    those chained after it aside), so that the same program finds its state in its savepoint and
    a changed one does not take another operator's."""
    h = hashlib.sha256()
    ops = [op for v in upstream(graph, vertex) for op in (v.operators[:1] if v is vertex
                                                           else v.operators)]
    for position, op in enumerate(ops):  # not operator_id: a notebook's graph grows per run
        h.update(f"{position}|{op.kind.value}|{op.name}|{op.uid or ''};".encode())
    return GENERATED_UID_PREFIX + h.hexdigest()[:16]


def upstream(graph: JobGraph, *vertices: JobVertex) -> list[JobVertex]:
    """The vertices upstream of ``vertices`` (themselves included), in the graph's order."""
    seen: dict[str, JobVertex] = {}

    def walk(x: JobVertex) -> None:
        if x.vertex_id in seen:
            return
        seen[x.vertex_id] = x
        for e in x.inputs:
            walk(graph.vertex(e.source))

    for v in vertices:
        walk(v)
    return [x for x in graph.vertices if x.vertex_id in seen]

