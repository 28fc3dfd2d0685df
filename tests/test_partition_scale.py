"""``tpcds partitions`` (the partition-count benchmark) on tiny sizes: every run's rows equal
the answer the generator knows, in both modes and all three relation kinds, dpp keeps exactly
the partitions the dimension names, and the outputs render. Nothing here times anything."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tpcds.partition_scale import (ScaleConfig, expected, kept_days, render_markdown,
                                   render_plot, run_scale)


def test_kept_days_spread_over_the_range() -> None:
    days = kept_days(1000, 30)
    assert len(days) == 30 and days[0] == 0 and days[-1] >= 900
    assert [d for d, _, _ in expected(1000, 30)] == days


def test_every_kind_and_mode_gives_the_known_rows(spark: Any, tmp_path: Path) -> None:
    cfg = ScaleConfig(tmp_path / "data", [40, 120], ["path", "declared", "catalog"],
                      ["spark", "dpp"], keep=4)
    result = run_scale(spark, cfg)
    runs = result["runs"]
    assert len(runs) == 2 * 3 * 2
    bad = [r for r in runs if not (r["ok"] and r["correct"])]
    assert not bad, bad
    for r in runs:
        if r["mode"] == "dpp":
            assert r["kept"] == f"4/{r['partitions']}", r
            assert r["phases"]["main_s"] >= 0.0
        else:
            assert r["kept"] is None
    md = render_markdown(result)
    assert "| catalog | dpp |" in md and "WRONG" not in md
    render_plot([result], tmp_path / "scale.png")
    assert (tmp_path / "scale.png").stat().st_size > 0
