"""The one atomic-write helper: all or nothing, no temporary left behind, ordinary permissions."""

import os
import stat

import pandas as pd
import pytest

from camdf.common.files import atomic_path, parquet_bytes, write_atomic


def test_write_atomic_replaces_text_and_bytes_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "deep" / "table.md"
    write_atomic(path, "old\n")
    write_atomic(path, "néw\n")
    assert path.read_text(encoding="utf-8") == "néw\n"
    write_atomic(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in path.parent.iterdir()) == ["table.md"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    path = tmp_path / "scores.parquet"
    write_atomic(path, "kept")
    with pytest.raises(RuntimeError, match="disk"):
        with atomic_path(path) as tmp:
            tmp.write_text("half")
            raise RuntimeError("disk full")
    assert path.read_text() == "kept"
    assert [p.name for p in tmp_path.iterdir()] == ["scores.parquet"]


def test_parquet_bytes_round_trip_without_the_index(tmp_path):
    frame = pd.DataFrame({"tool": ["a", "b"], "cost": [1.5, 2.0]}, index=[7, 9])
    path = write_atomic(tmp_path / "f.parquet", parquet_bytes(frame))
    pd.testing.assert_frame_equal(pd.read_parquet(path), frame.reset_index(drop=True))
