"""The readings declared once (agents/quality/readings.py): what the metrics compute, what the defects may read and
the docs' table are that declaration."""
from pathlib import Path

import numpy as np
from scipy.ndimage import gaussian_filter

from edit_agents.agents.quality import defects
from edit_agents.agents.quality.defects import DEFECTS, Defect, Finding
from edit_agents.agents.quality.metrics import CLASSIC_IQA, global_statistics, texture_crops, texture_statistics
from edit_agents.agents.quality.readings import READ_WHERE, READINGS

DOCS = Path(__file__).resolve().parents[3] / "docs" / "photoagent.md"


def _declared(where: str) -> set[str]:
    return {name for name, place in READ_WHERE.items() if place == where}


def test_the_metrics_compute_the_declared_readings_where_they_are_declared(photos):
    soft = gaussian_filter(np.asarray(photos["astronaut"], np.float32), (2.0, 2.0, 0))  # short of detail: edges read
    assert set(global_statistics(soft)) == _declared("copy")
    assert set(texture_statistics(texture_crops(soft))) == _declared("crops")
    assert set(CLASSIC_IQA) == _declared("mosaic")


def test_the_docs_table_of_readings_is_the_declaration():
    text = DOCS.read_text()
    head = "| reading | what it measures | where |\n| --- | --- | --- |\n"
    table = text[text.index(head) + len(head):].split("\n\n", 1)[0]
    assert table.splitlines() == [r.row() for r in READINGS], "regenerate docs/photoagent.md's table from READINGS"


def test_a_defect_that_reads_an_undeclared_reading_is_named(monkeypatch):
    assert defects._undeclared() == []
    sparkle = Defect("sparkle", ("sparkle_share",), lambda seen: (Finding("sparkle", 0.0, 1.0, False, ""), []))
    monkeypatch.setattr(defects, "DEFECTS", DEFECTS + (sparkle,))
    assert defects._undeclared() == ["sparkle reads sparkle_share"]


def test_each_penalty_is_read_from_the_statistics_that_compute_its_reading(photos):
    soft = gaussian_filter(np.asarray(photos["coffee"], np.float32), (2.0, 2.0, 0))
    on_crops, on_copy = texture_statistics(texture_crops(soft)), global_statistics(soft)
    for name, penalty in defects.PENALTY.items():  # the reward reads crops only for TEXTURE_PENALTIES
        assert penalty.reading in (on_crops if name in defects.TEXTURE_PENALTIES else on_copy), name
