#!/usr/bin/env bash
# run_pytest.sh PYTHON TEST_FILE: runs one pytest file; exit 77 (ctest: skipped) when PYTHON
# lacks numpy or pytest, or the ingot module was not built.
PY=${1:-/usr/bin/python3}
FILE=$2
if ! "$PY" -c 'import numpy, pytest' 2>/dev/null; then
  echo "SKIP: $PY has no numpy/pytest (Debian: apt install python3-numpy python3-pytest)"
  exit 77
fi
if ! "$PY" -c 'import ingot' 2>/dev/null; then
  echo "SKIP: the ingot module is not importable from PYTHONPATH=$PYTHONPATH ($("$PY" -c 'import ingot' 2>&1 | tail -1))"
  exit 77
fi
exec "$PY" -m pytest -q -p no:cacheprovider "$FILE"
