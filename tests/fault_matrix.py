"""The fault matrix's report (tests/reliability): one line per case (what
was broken, what came out, how long it took) and a summary at the end of
the pytest run. A plugin registered by the ``outcome`` fixture on first use,
so that it needs no conftest (whose module name tests/conftest.py holds)."""

from __future__ import annotations

import pytest


class MatrixReport:
    def __init__(self) -> None:
        self.cases: dict[str, dict] = {}

    def pytest_runtest_logreport(self, report) -> None:
        entry = self.cases.get(report.nodeid)
        if entry is None or (report.when != "call" and not report.failed):
            return
        entry["status"] = "ok" if report.passed else ("FAIL" if report.failed else report.outcome)
        entry["seconds"] = entry.get("seconds", 0.0) + report.duration

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.cases:
            return
        tr = terminalreporter
        tr.section("fault matrix")
        for entry in self.cases.values():
            tr.write_line(f"{entry['status']:4s} {entry.get('seconds', 0):6.1f}s  {entry['case']}: {entry['seen'] or '-'}")
        ok = sum(e["status"] == "ok" for e in self.cases.values())
        total = sum(e.get("seconds", 0) for e in self.cases.values())
        tr.write_line(f"fault matrix: {ok} of {len(self.cases)} cases gave the expected outcome ({total:.1f} s)")


@pytest.fixture
def outcome(request):
    """``outcome(text)`` records what a case produced (printed at the end)."""
    plugin = request.config.pluginmanager.get_plugin("fault-matrix")
    if plugin is None:
        plugin = MatrixReport()
        request.config.pluginmanager.register(plugin, "fault-matrix")
    name = request.node.callspec.params.get("name", request.node.name) if hasattr(request.node, "callspec") else request.node.name
    entry = plugin.cases.setdefault(request.node.nodeid, {"case": name, "seen": "", "status": "?"})

    def record(text: str) -> str:
        entry["seen"] = " ".join(str(text).split())[:420]
        return text

    return record
