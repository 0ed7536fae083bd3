"""The cheaper reads behind a never-served run page's first load (issue 35): each gives what the slower one gave."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from judges import read_judgment
from judges.scoring._facts import repeat_runs, repeated_lines
from personas.graph import EdgeState, MemberState
from simulator.runfolder import RunFolderError
from tests._rating_fixtures import SessionSpec, make_judged_run, session_for


def _score(supporter: str, session_id: str, judge: str, dim: str) -> int:
    return 3


def _run(tmp_path: Path):
    return make_judged_run(tmp_path / "run", "sup/a", [SessionSpec("s1")], _score)


def test_a_newer_judgment_is_named_as_newer_whether_or_not_it_validates(tmp_path: Path) -> None:
    folder = _run(tmp_path)
    path = folder.judgments_dir / "s1.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["schema_version"] = 99
    path.write_text(json.dumps(data), encoding="utf-8")  # the same layout, a newer number
    with pytest.raises(RunFolderError, match="newer rescue-sim \\(judgment schema 99\\); upgrade"):
        read_judgment(folder, "s1")
    data["a_field_from_the_future"] = 1
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RunFolderError, match="newer rescue-sim \\(judgment schema 99\\); upgrade"):
        read_judgment(folder, "s1")


def test_a_broken_judgment_of_this_layout_still_says_rerun_judge(tmp_path: Path) -> None:
    folder = _run(tmp_path)
    (folder.judgments_dir / "s1.json").write_text('{"schema_version": 1, "session_id": 5}', encoding="utf-8")
    with pytest.raises(RunFolderError, match="not a valid judgment .*rerun `rescue-sim judge`"):
        read_judgment(folder, "s1")
    (folder.judgments_dir / "s1.json").write_text("[1, 2", encoding="utf-8")
    with pytest.raises(RunFolderError, match="not a valid judgment"):
        read_judgment(folder, "s1")
    assert read_judgment(folder, "s2") is None


@pytest.mark.parametrize(
    ("given", "kept"), [(-3, 0), (-0.5, 0), (0, 0), (4.25, 4.25), (10, 10), (12.5, 10), (math.inf, 10), ("7", 7.0)]
)
def test_scales_are_clamped_as_before(given, kept) -> None:
    assert MemberState(name="Ana", emotion="hurt", intensity=given).intensity == kept
    edge = EdgeState(source="Ana", target="Ben", viewpoint="v", attitude="a", warmth=given, tension=given)
    assert (edge.warmth, edge.tension) == (kept, kept)


def test_nan_is_still_refused() -> None:
    with pytest.raises(ValueError, match="got NaN"):
        MemberState(name="Ana", emotion="hurt", intensity=math.nan)


def test_repeated_lines_are_the_same_when_texts_come_back_from_the_cache() -> None:
    line = "I hear how tired you both are of having this same argument about the weekend plans again"
    record = session_for(SessionSpec("s1", text={3: line, 5: line}), "sup/a", ["judge/alpha-1"])
    first = repeated_lines(record)
    assert [(r.turn, r.repeats_turn, r.coverage) for r in first] == [(5, 3, 1.0)]
    assert repeated_lines(record) == first  # every text now comes from the cache
    fresh = session_for(SessionSpec("s2"), "sup/a", ["judge/alpha-1"])
    assert repeated_lines(fresh) == []
    assert (
        repeat_runs(fresh.turns[4], fresh.turns[:4]) is None
        or repeat_runs(fresh.turns[4], fresh.turns[:4]).coverage < 1
    )
