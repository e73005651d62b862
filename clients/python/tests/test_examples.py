"""The examples (examples/, shown in docs/clients.md) run against a real tenured, and the doc
shows them exactly as they are."""

import os
import re
import subprocess
import sys

from conftest import ROOT

EXPECTED = """\
token 1 writes "first draft": accepted
token 2 writes "final": accepted
token 1 writes late: rejected
event acquired example/report token 1
event released example/report token 1
event acquired example/report token 2
event released example/report token 2
"""


def test_fenced_write_example(daemon):
    report = daemon.dir / "report.txt"
    env = dict(os.environ, TENURE_SOCKET=daemon.socket,
               PYTHONPATH=str(ROOT / "clients/python"))
    result = subprocess.run([sys.executable, str(ROOT / "examples/python/fenced_write.py"),
                             str(report)], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED
    assert report.read_text() == "final"


def test_docs_show_the_tested_examples():
    doc = (ROOT / "docs/clients.md").read_text()
    shown = re.findall(r"<!-- example: (\S+) -->\n```\w+\n(.*?)```", doc, re.S)
    assert {path for path, _ in shown} >= {"examples/fenced_write.cpp",
                                           "examples/python/fenced_write.py"}
    for path, code in shown:
        assert code == (ROOT / path).read_text(), f"docs/clients.md shows an old {path}"
