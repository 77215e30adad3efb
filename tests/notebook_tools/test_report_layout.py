"""A report reads result first: tidy numbers, folded detail, and the layout check that the
notebook test applies to executed notebooks."""

from __future__ import annotations

import base64
import io
import math

import pandas as pd

from tbrl_lib.notebook_tools import folded, headline, tidy
from tbrl_lib.notebook_tools.layout import html_lines, layout_problems, output_lines, png_height
from tbrl_lib.notebook_tools.tables import number_text


def test_numbers_read_as_a_person_writes_them():
    assert number_text(0.68512) == "0.685"
    assert number_text(1.49e-08) == "1.5e-08"
    assert number_text(12.0) == "12" and number_text(38400) == "38,400"
    assert number_text(float("nan")) == "" and number_text(None) == ""
    assert number_text("no_action") == "no_action"


def test_tidy_puts_step_in_the_index_and_drops_what_was_never_measured():
    frame = pd.DataFrame(
        {
            "step": [1, 2],
            "train/reward": [0.123456, 0.5],
            "eval/solve_rate": [math.nan, 0.25],
            "never": [math.nan, math.nan],
            "unlisted": [1, 2],
        }
    )
    labels = {"step": "step", "train/reward": "reward", "eval/solve_rate": "held-out", "never": "x"}
    shown = tidy(frame, index="step", labels=labels)
    assert list(shown.columns) == ["reward", "held-out"] and shown.index.name == "step"
    assert shown.loc["1"].tolist() == ["0.123", ""] and shown.loc["2"].tolist() == ["0.5", "0.25"]
    assert "NaN" not in shown.to_html()


def _png(height: int) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(2, height / 100))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def _cell(*outputs):
    return {"cell_type": "code", "source": "x", "outputs": list(outputs)}


def _html(text):
    return {"output_type": "display_data", "data": {"text/html": text, "text/plain": "<HTML>"}}


def test_lines_of_outputs_count_what_a_reader_scrolls_past():
    table = pd.DataFrame({"a": range(100)}).to_html()
    assert html_lines(table) >= 100
    assert html_lines(folded("all 100 rows", table)) == 1  # closed: its summary alone
    assert html_lines("<details open><summary>t</summary><p>a</p><p>b</p></details>") == 3
    assert html_lines("<div style='white-space:pre-wrap'>1\n2\n3</div>") == 3
    assert output_lines({"output_type": "stream", "text": "a\nb\nc\n"}) >= 3
    image = {"output_type": "display_data", "data": {"image/png": _png(400)}}
    assert png_height(image["data"]["image/png"]) == 400 and output_lines(image) == 20


def test_a_report_leads_with_its_headline_and_plot_and_stays_within_a_screen():
    lead = _cell(_html(headline(["<b>reward</b> 0.2 &rarr; 0.6"])))
    plot = _cell({"output_type": "display_data", "data": {"image/png": _png(300)}})
    table = _cell(_html(pd.DataFrame({"a": [1, 2]}).to_html()))
    assert layout_problems({"cells": [lead, plot, table]}) == []
    problems = layout_problems({"cells": [table, lead, plot]})
    assert problems == ["a table comes before the headline", "a table comes before the plot"]
    long = _cell(_html(pd.DataFrame({"a": range(384)}).to_html()))
    problems = layout_problems({"cells": [lead, plot, long]})
    assert len(problems) == 1 and "more than a screen" in problems[0]
    assert layout_problems({"cells": [table]}) == [
        "no headline in the outputs",
        "no plot in the outputs",
    ]
