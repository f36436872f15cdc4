"""`jsonl_log`: a record cut short by a kill mid-append is skipped, then cut off, never merged."""

import json

import pytest

from mbrl.jsonl_log import _CHUNK, append_records, read_records


def test_records_round_trip_and_a_missing_log_is_empty(tmp_path):
    log = tmp_path / "runs" / "eval.jsonl"
    assert read_records(log) == []
    append_records(log, [{"step": 1}])
    append_records(log, [{"step": 2}, {"step": 3}])
    assert read_records(log) == [{"step": 1}, {"step": 2}, {"step": 3}]


@pytest.mark.parametrize("torn_length", [5, 3 * _CHUNK])  # within one read-back chunk, and past it
def test_a_torn_last_line_is_skipped_then_cut_off_by_the_next_append(tmp_path, torn_length):
    log = tmp_path / "rounds.jsonl"
    append_records(log, [{"round": 1}])
    torn = json.dumps({"round": 2, "pad": "x" * torn_length})[: torn_length + 2]
    with log.open("a") as file:  # what a kill -9 during the append leaves
        file.write(torn)
    assert read_records(log) == [{"round": 1}]
    append_records(log, [{"round": 2}])
    assert log.read_text() == '{"round": 1}\n{"round": 2}\n'


def test_a_log_holding_only_a_torn_line_is_cut_to_nothing(tmp_path):
    log = tmp_path / "eval.jsonl"
    log.write_text('{"step": 1')
    assert read_records(log) == []
    append_records(log, [{"step": 1}])
    assert read_records(log) == [{"step": 1}]


def test_damage_before_the_last_line_raises_naming_the_file_and_line(tmp_path):
    log = tmp_path / "eval.jsonl"
    log.write_text('{"step": 1}\n{"step": \n{"step": 3}\n')
    with pytest.raises(ValueError, match=r"eval\.jsonl, line 2: not a JSON record"):
        read_records(log)
