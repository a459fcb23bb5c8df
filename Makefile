# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
BUDGET ?= 60
OUT    ?= gbft-out

.PHONY: run test install clean records

$(PY):
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[all,test,learn]"
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/gbft fuzz --engine mnn --budget $(BUDGET) --seed 0 --out $(OUT)

# The type checker first (pyproject.toml [tool.mypy]: strict, with its listed exceptions).
test: $(STAMP)
	$(PY) -m mypy
	$(PY) -m pytest -q $(PYTEST_ARGS)

# The ONNX operator records (ops/data/onnx_records*.json: opsets 17 and 27) from the installed onnx package.
records: $(STAMP)
	$(VENV)/bin/gbft onnx-records --opset 17
	$(VENV)/bin/gbft onnx-records --opset 27

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
