"""`smi parse` on a JSON view holding an integer of more than 4,300 digits (Python refuses to read one): one line of
error, never a traceback."""
from __future__ import annotations

from lumikit.cli import main


def test_an_integer_python_cannot_read_is_a_parse_error(tmp_path, capsys):
    view = tmp_path / "rocm-smi.json"
    view.write_text('{"card0": {"Temperature (Sensor edge) (C)": ' + "9" * 5000 + "}}")
    assert main(["smi", "parse", str(view), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"lumikit: error: {view}: not valid JSON") and err.count("\n") == 1
