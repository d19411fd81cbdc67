"""`evaluate` shows the running stages' progress on stderr while its
Snakemake run goes on: a real child process writing a tqdm-style bar to
logs/<stage>.log (as a stage under Snakemake does) is reported by name."""

import sys

from hatecheck_pipeline.cli.evaluate import run_with_progress

CHILD = r"""
import sys, time
with open("logs/predict_m_hatecheck.log", "w") as log:
    for i in range(1, 4):
        log.write(f"predict:  {i}/3 batches\r"); log.flush()
        time.sleep(0.4)
sys.exit(3)
"""


def test_the_running_stages_progress_reaches_stderr_and_the_exit_status_is_kept(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    done = run_with_progress([sys.executable, "-c", CHILD], {}, every_s=0.1)
    err = capfd.readouterr().err
    assert done.returncode == 3
    lines = [line for line in err.splitlines() if line.startswith("  predict_m_hatecheck: ")]
    assert lines and lines[0].endswith("batches") and len(lines) == len(set(lines))  # each change once
    assert "predict:  3/3 batches" in lines[-1] or "predict:  2/3 batches" in lines[-1]


def test_no_progress_lines_when_turned_off(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    assert run_with_progress([sys.executable, "-c", CHILD], {}, every_s=0).returncode == 3
    assert "predict_m_hatecheck" not in capfd.readouterr().err
