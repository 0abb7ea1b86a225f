"""The static HTML of jobs and clusters: every JobVertex name, the accumulators, valid SVG."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from sessioncluster.graph.lifecycle import JobStatus as J
from sessioncluster.jupyter.html import (
    cluster_overview_html,
    dag_svg,
    format_value,
    job_details_html,
)

from .samples import ACCUMULATORS, JOB_ID, job_details, job_graph, overview

SVG_NS = "{http://www.w3.org/2000/svg}"


class _Text(HTMLParser):
    """The text a browser shows (entities decoded), plus every title attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def text_of(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return "".join(parser.parts)


def svgs_of(html: str) -> list[ET.Element]:
    return [ET.fromstring(m) for m in re.findall(r"<svg\b.*?</svg>", html, flags=re.S)]


def test_every_vertex_name_and_accumulator_value_is_shown() -> None:
    details = job_details()
    html = job_details_html(details)
    text = text_of(html)
    for v in details.job_graph.vertices:
        assert v.name in text
        for op in v.operators:
            assert op.name in text
    for name, value in ACCUMULATORS.items():
        assert name in text
        if isinstance(value, dict):
            for k, count in value.items():
                assert f"{k}: {count}" in text
        else:
            assert format_value(value) in text
    assert "4242" in text and "12.5" in text
    assert JOB_ID in text and "word count" in text and "FAILED" in text


def test_names_are_escaped_and_read_back_as_written() -> None:
    html = job_details_html(job_details())
    assert "<words>" not in html
    assert "tokenize &lt;words&gt; &amp; &#x27;more&#x27;" in html  # html.escape, quotes too
    assert "Keyed Aggregation -> Sink: Collect" in text_of(html)


def test_the_dag_is_valid_svg_with_one_box_per_vertex() -> None:
    details = job_details()
    svg = ET.fromstring(dag_svg(details.job_graph))
    assert svg.tag == f"{SVG_NS}svg"
    rects = svg.findall(f".//{SVG_NS}rect")
    assert len(rects) == len(details.job_graph.vertices)
    paths = [p for p in svg.findall(f".//{SVG_NS}path") if p.get("marker-end")]
    assert len(paths) == len(details.job_graph.edges)
    labels = {t.text for t in svg.findall(f"{SVG_NS}text")}
    assert {"HASH", "REBALANCE"} <= labels
    titles = [t.text or "" for t in svg.findall(f".//{SVG_NS}title")]
    for v in details.job_graph.vertices:
        assert any(t.startswith(v.name) for t in titles)


def test_every_svg_in_the_page_parses_and_states_colour_the_boxes() -> None:
    html = job_details_html(job_details())
    svgs = svgs_of(html)
    assert len(svgs) == 2  # the DAG and the Histogram 'lengths'
    dag = svgs[0]
    fills = {r.get("fill") for r in dag.findall(f".//{SVG_NS}rect")}
    assert len(fills) >= 2  # FINISHED sources, the FAILED aggregation
    bars = svgs[1].findall(f".//{SVG_NS}rect")
    assert len(bars) == len(ACCUMULATORS["lengths"])


def test_the_user_traceback_and_subtasks_are_shown() -> None:
    text = text_of(job_details_html(job_details()))
    assert "Traceback (most recent call last)" in text
    assert "ValueError: bad record 'x'" in text and 'File "/home/me/job.py", line 7' in text
    # the latest attempt of subtask 2/2 of the source is #1 (FINISHED on TaskManager 1)
    assert "#1" in text and "2/2" in text


def test_a_finished_job_without_error_has_no_traceback() -> None:
    details = job_details(J.FINISHED)
    details.error, details.error_text = None, None
    html = job_details_html(details, net_runtime_ms=3456)
    assert "Traceback" not in html and "3456 ms" in html and "FINISHED" in html


def test_cluster_overview() -> None:
    text = text_of(cluster_overview_html(overview()))
    assert "dev" in text and "1234" in text and "local-cluster[2,2,1024]" in text
    for needle in ("host-a", "4001", "4002", "1/2", "3 (5 hits, 3 misses)", "live job", "old job"):
        assert needle in text
    order = [text.index(s) for s in ("Running jobs", "live job", "Recent jobs", "old job")]
    assert order == sorted(order)


def test_layout_of_the_sample_graph() -> None:
    # the two sources in layer 0, the aggregation in layer 1 between them
    svg = ET.fromstring(dag_svg(job_graph()))
    xs = sorted(float(r.get("x") or 0) for r in svg.findall(f".//{SVG_NS}rect"))
    assert xs[0] == xs[1] < xs[2]
