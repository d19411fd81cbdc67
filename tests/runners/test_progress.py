"""`hatecheck-pipeline follow` on a fake logs folder."""

import io
import os
import time

from hatecheck_pipeline.runners import progress


def fake_logs(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "benchmarks").mkdir()  # core.usage's records: not stage logs
    (logs / "benchmarks" / "x.log").write_text("not a stage\n")
    (logs / "train_a.log").write_bytes(b"loading\ntrain:  10%|#  | 1/10\rtrain:  20%|## | 2/10\r\x1b[32m\x1b[0m")
    (logs / "predict_b.log").write_text("predict: 500/3728 rows\n")
    (logs / "ingest_c.log").write_text("ingest_c: 3 file(s) verified\n")
    old = time.time() - 3600
    os.utime(logs / "ingest_c.log", (old, old))  # finished an hour ago
    return logs


def test_the_logs_a_process_holds_open_are_the_running_stages(tmp_path):
    logs = fake_logs(tmp_path)
    with open(logs / "train_a.log", "ab"):  # as the rule's `> logs/<stage>.log` holds it
        held = progress.held_logs(logs)
        rows = progress.running_stages(logs, held)
    assert held == {(logs / "train_a.log").resolve()}
    assert rows == [progress.Running("train_a", "train:  20%|## | 2/10", rows[0].age_s)] and rows[0].age_s < 60
    # closed again: nothing holds it
    assert progress.held_logs(logs) == set()


def test_without_a_holder_here_recent_logs_stand_for_running_stages(tmp_path):
    logs = fake_logs(tmp_path)
    rows = progress.running_stages(logs, held=set(), recent_s=60)
    assert [(r.stage, r.line) for r in rows] == [("predict_b", "predict: 500/3728 rows"), ("train_a", "train:  20%|## | 2/10")]
    assert progress.running_stages(logs, held=None, recent_s=60, now=time.time() + 120) == []
    assert progress.running_stages(tmp_path / "no-logs", held=set()) == []


def test_follow_refreshes_until_no_stage_runs_and_no_run_is_alive(tmp_path):
    logs = fake_logs(tmp_path)
    out = io.StringIO()
    ticks = []

    def sleep(_s):
        ticks.append(_s)
        if len(ticks) == 1:  # the stage moves on
            with open(logs / "train_a.log", "ab") as fh:
                fh.write(b"\rtrain:  30%|###| 3/10")
        if len(ticks) == 3:  # every stage finished; the run ends after one more look
            old = time.time() - 3600
            for p in logs.glob("*.log"):
                os.utime(p, (old, old))
        if len(ticks) == 4:
            alive[0] = False

    alive = [True]
    refreshes = progress.follow(
        logs, interval_s=0.5, recent_s=60, out=out, run_alive=lambda: alive[0], sleep=sleep, find_held=lambda: set()
    )
    text = out.getvalue()
    assert refreshes == 4 and ticks == [0.5] * 4
    blocks = text.split("\n\n")
    assert blocks[0].splitlines()[1].startswith("train_a    train:  20%|## | 2/10  (")
    assert blocks[1].splitlines()[1].startswith("train_a    train:  30%|###| 3/10  (")
    # unchanged blocks are not printed again; between jobs it says it waits; it ends with one line
    assert text.count("train:  30%") == 1 and "(no stage running; waiting for the run's next job)" in text
    assert text.endswith("no stage is running\n")
