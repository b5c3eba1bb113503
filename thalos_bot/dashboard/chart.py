"""A small SVG renderer: bars on the left axis, a line on the right axis, one point per
label. It draws on the server with presentation attributes only (no script, no style
attribute), so it needs nothing but the page's CSP-clean markup; every label is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from thalos_bot.dashboard.markup import Markup, tag

WIDTH, HEIGHT = 720, 280
LEFT, RIGHT, TOP, BOTTOM = 64, 64, 28, 44
BAR_COLOUR, LINE_COLOUR, AXIS_COLOUR, GRID_COLOUR = "#2f5fb3", "#c25e00", "#5d6673", "#d9dde3"
TICKS = 4


@dataclass(frozen=True, slots=True)
class Point:
    label: str
    """Under the axis (every few points, and the last)."""
    bar: float
    line: float
    note: str = ""
    """The tooltip of this point's bar (an SVG ``<title>``)."""


def nice_step(largest: float, ticks: int = TICKS) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) so ``ticks`` steps cover
    ``largest``; 1 for nothing at all."""
    if largest <= 0:
        return 1.0
    raw = largest / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    return next(factor * power for factor in (1.0, 2.0, 2.5, 5.0, 10.0) if factor * power >= raw)


def compact(value: float) -> str:
    """1234 → 1.2k, 3_400_000 → 3.4M."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}" if value != int(value) else str(int(value))


def _num(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def bar_line_chart(
    points: Sequence[Point],
    *,
    title: str,
    bar_name: str,
    line_name: str,
    bar_format: Callable[[float], str] = compact,
    line_format: Callable[[float], str] = compact,
    empty: str = "Nothing to show.",
    label_every: int = 5,
) -> Markup:
    """The chart as an ``<svg>`` element with a title, both axes, grid lines, the bars,
    the line and its dots, and a legend."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    bottom = TOP + plot_h
    bar_step = nice_step(max((p.bar for p in points), default=0.0))
    line_step = nice_step(max((p.line for p in points), default=0.0))
    bar_top, line_top = bar_step * TICKS, line_step * TICKS
    slot = plot_w / max(1, len(points))

    def x_mid(index: int) -> float:
        return LEFT + slot * index + slot / 2

    def y_of(value: float, top: float) -> float:
        return bottom - (value / top) * plot_h

    parts: list[Markup] = [tag("title", title)]
    for tick in range(TICKS + 1):
        y = y_of(bar_step * tick, bar_top)
        parts.append(
            tag("line", x1=LEFT, x2=LEFT + plot_w, y1=_num(y), y2=_num(y), stroke=GRID_COLOUR)
        )
        parts.append(
            tag("text", bar_format(bar_step * tick), x=LEFT - 6, y=_num(y + 4), text_anchor="end")
        )
        parts.append(
            tag(
                "text",
                line_format(line_step * tick),
                x=LEFT + plot_w + 6,
                y=_num(y + 4),
                text_anchor="start",
            )
        )
    parts.append(tag("line", x1=LEFT, x2=LEFT, y1=TOP, y2=bottom, stroke=AXIS_COLOUR))
    parts.append(
        tag("line", x1=LEFT + plot_w, x2=LEFT + plot_w, y1=TOP, y2=bottom, stroke=AXIS_COLOUR)
    )
    parts.append(tag("line", x1=LEFT, x2=LEFT + plot_w, y1=bottom, y2=bottom, stroke=AXIS_COLOUR))
    bar_width = max(1.0, slot * 0.7)
    bars: list[Markup] = []
    for index, point in enumerate(points):
        height = (point.bar / bar_top) * plot_h
        bars.append(
            tag(
                "rect",
                tag("title", point.note or f"{point.label}: {bar_format(point.bar)}"),
                x=_num(x_mid(index) - bar_width / 2),
                y=_num(bottom - height),
                width=_num(bar_width),
                height=_num(height),
                fill=BAR_COLOUR,
                class_="bar",
            )
        )
        if index % label_every == 0 or index == len(points) - 1:
            parts.append(
                tag("text", point.label, x=_num(x_mid(index)), y=bottom + 16, text_anchor="middle")
            )
    parts.append(tag("g", bars, class_="bars"))
    if points:
        coords = " ".join(
            f"{_num(x_mid(i))},{_num(y_of(p.line, line_top))}" for i, p in enumerate(points)
        )
        parts.append(
            tag(
                "polyline",
                points=coords,
                fill="none",
                stroke=LINE_COLOUR,
                stroke_width=2,
                class_="line",
            )
        )
        parts.append(
            tag(
                "g",
                (
                    tag(
                        "circle",
                        tag("title", f"{p.label}: {line_format(p.line)}"),
                        cx=_num(x_mid(i)),
                        cy=_num(y_of(p.line, line_top)),
                        r=2.5,
                        fill=LINE_COLOUR,
                    )
                    for i, p in enumerate(points)
                ),
                class_="dots",
            )
        )
    if not any(p.bar or p.line for p in points):
        parts.append(
            tag("text", empty, x=LEFT + plot_w / 2, y=TOP + plot_h / 2, text_anchor="middle")
        )
    legend_y = HEIGHT - 8
    parts.append(
        tag(
            "g",
            tag("rect", x=LEFT, y=legend_y - 9, width=12, height=10, fill=BAR_COLOUR),
            tag("text", bar_name, x=LEFT + 16, y=legend_y),
            tag(
                "line",
                x1=LEFT + 180,
                x2=LEFT + 196,
                y1=legend_y - 4,
                y2=legend_y - 4,
                stroke=LINE_COLOUR,
                stroke_width=2,
            ),
            tag("text", line_name, x=LEFT + 200, y=legend_y),
            class_="legend",
        )
    )
    return tag(
        "svg",
        parts,
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {WIDTH} {HEIGHT}",
        role="img",
        aria_label=title,
        font_size=11,
        font_family="system-ui, sans-serif",
        fill=AXIS_COLOUR,
    )
