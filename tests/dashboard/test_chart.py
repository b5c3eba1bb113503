"""The SVG renderer: 30 days of bars and a line, empty days drawn as zero, labels
escaped, well-formed SVG with no script or style."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import date, timedelta

from thalos_bot.dashboard.chart import Point, bar_line_chart, compact, nice_step

SVG = "{http://www.w3.org/2000/svg}"


def _parse(markup: str) -> ET.Element:
    return ET.fromstring(markup)


def _days(values: dict[int, tuple[int, float]]) -> list[Point]:
    first = date(2026, 11, 2)
    return [
        Point(f"{first + timedelta(days=i):%m-%d}", *values.get(i, (0, 0.0))) for i in range(30)
    ]


def test_thirty_days_make_thirty_bars_and_a_thirty_point_line() -> None:
    svg = _parse(
        bar_line_chart(
            _days({0: (1200, 0.5), 29: (4800, 2.0)}), title="t", bar_name="tokens", line_name="cost"
        )
    )
    bars = svg.findall(f"{SVG}g[@class='bars']/{SVG}rect")
    assert len(bars) == 30
    heights = [float(bar.get("height", "0")) for bar in bars]
    assert heights[1:29] == [0.0] * 28  # the empty days are there, at zero
    assert heights[29] == 4 * heights[0]
    line = svg.find(f"{SVG}polyline")
    assert line is not None
    assert len(line.get("points", "").split()) == 30
    labels = [t.text for t in svg.findall(f"{SVG}text")]
    assert "11-02" in labels
    assert "12-01" in labels
    assert {"0", "2k", "4k", "6k", "8k"} <= set(labels)  # round steps cover 4,800
    assert svg.get("role") == "img"


def test_a_month_with_nothing_says_so_and_still_draws_axes() -> None:
    markup = bar_line_chart(
        _days({}), title="t", bar_name="tokens", line_name="cost", empty="Nothing spent."
    )
    svg = _parse(markup)
    assert "Nothing spent." in [t.text for t in svg.findall(f"{SVG}text")]
    assert all(
        float(b.get("height", "1")) == 0 for b in svg.iter(f"{SVG}rect") if b.get("class") == "bar"
    )
    assert len(svg.findall(f"{SVG}line")) >= 3


def test_every_label_title_and_name_is_escaped() -> None:
    hostile = '<script>alert(1)</script>" onload="x'
    markup = bar_line_chart(
        [Point(hostile, 5, 1.0, note=hostile)],
        title=hostile,
        bar_name=hostile,
        line_name=hostile,
    )
    assert "<script" not in markup
    assert 'onload="x' not in markup
    assert " style=" not in markup
    svg = _parse(markup)  # still well-formed
    assert svg.get("aria-label") == hostile
    assert hostile in [t.text for t in svg.iter(f"{SVG}text")]
    assert hostile in [t.text for t in svg.iter(f"{SVG}title")]


def test_steps_are_round_and_numbers_compact() -> None:
    assert nice_step(0) == 1.0
    assert nice_step(4800) == 2000
    assert nice_step(900) == 250
    assert nice_step(0.37) == 0.1
    assert compact(1234) == "1.23k"
    assert compact(3_400_000) == "3.4M"
    assert compact(250) == "250"
    assert compact(0.25) == "0.25"
