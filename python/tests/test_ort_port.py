"""ONNX Runtime user code runs on ingot when only the import changes."""
import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from conftest import MODELS

HERE = pathlib.Path(__file__).resolve().parent
SCRIPT = (HERE / "ort_user_script.py").read_text()
ORT_IMPORT, INGOT_IMPORT = "import onnxruntime as ort", "import ingot as ort"


def run_script(text, tmp_path, name, out):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run([sys.executable, str(path), str(MODELS / "bert" / "model.torchscript.onnx"),
                           str(MODELS / "bert" / "inputs.npz"), str(out)],
                          capture_output=True, text=True, env=env, timeout=120)


def test_only_the_import_changes(tmp_path):
    assert SCRIPT.count(ORT_IMPORT) == 1
    ported = SCRIPT.replace(ORT_IMPORT, INGOT_IMPORT)
    assert [a for a, b in zip(SCRIPT.splitlines(), ported.splitlines()) if a != b] == [ORT_IMPORT]
    r = run_script(ported, tmp_path, "ported", tmp_path / "ingot.npz")
    assert r.returncode == 0, r.stderr
    assert "input_ids tensor(int64) ['batch', 'sequence']" in r.stdout
    assert "providers ['CPUExecutionProvider']" in r.stdout
    ref = np.load(MODELS / "bert" / "reference.npz")
    got = np.load(tmp_path / "ingot.npz")
    assert np.abs(got["logits"] - ref["logits"]).max() <= 1e-4


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="onnxruntime is not installed")
def test_same_results_as_onnxruntime(tmp_path):  # pragma: no cover - needs onnxruntime
    assert run_script(SCRIPT, tmp_path, "orig", tmp_path / "ort.npz").returncode == 0
    assert run_script(SCRIPT.replace(ORT_IMPORT, INGOT_IMPORT), tmp_path, "ported", tmp_path / "ingot.npz").returncode == 0
    a, b = np.load(tmp_path / "ort.npz"), np.load(tmp_path / "ingot.npz")
    for k in a.files:
        assert np.abs(a[k] - b[k]).max() <= 1e-4
