"""Shared fixtures: the repository root, the `ingot` module, small tokenizers that fit the
test models (vocabulary 1000).

Run:  PYTHONPATH=build/python /usr/bin/python3 -m pytest python/tests
(ctest sets PYTHONPATH and INGOT_SOURCE_DIR itself.)
"""
import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = pathlib.Path(os.environ.get("INGOT_SOURCE_DIR", HERE.parent.parent))
sys.path.insert(0, str(HERE))

try:
    import ingot  # noqa: F401
except ImportError:  # run by hand without PYTHONPATH: try the usual build directories
    for d in ("build/python", "build-py/python"):
        if (ROOT / d).is_dir():
            sys.path.insert(0, str(ROOT / d))
            break

from small_tokenizer import shrink  # noqa: E402

MODELS = ROOT / "tests" / "models"
TEXT = ROOT / "tests" / "text"
CLI_MODELS = ROOT / "tests" / "cli" / "models"


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def small_tokenizers(tmp_path_factory):
    """{"wordpiece": path, "bpe_gpt2": path, "bpe_roberta": path}, cut to 1000 ids."""
    d = tmp_path_factory.mktemp("tok")
    out = {}
    for name in ("wordpiece", "bpe_gpt2", "bpe_roberta"):
        p = d / f"{name}.tokenizer.json"
        shrink(TEXT / f"{name}.tokenizer.json", p, 1000)
        out[name] = p
    return out
