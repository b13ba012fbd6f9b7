# Entry points. `make run` and `make test` work on a fresh clone (they create the venvs).
SHELL := /bin/bash
PY313 := $(shell ls -d $$HOME/.pyenv/versions/3.13*/bin/python3.13 2>/dev/null | tail -1 || true)
PY313 := $(or $(PY313),$(shell for p in /usr/local/bin/python3.13 /usr/bin/python3.13; do [ -x $$p ] && echo $$p && break; done))
PYTHON_FOR_VENV := $(if $(PY313),$(PY313),python3)
VENV := .venv
PY := $(VENV)/bin/python
SAM_VENV := .venv-sam
SAM := $(SAM_VENV)/bin/sam
PORT ?= 3000
REGION ?= eu-west-1
STAGE ?= dev

.PHONY: venv sam-venv run test test-fast lint validate build deploy bench pr token job clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON_FOR_VENV) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

$(SAM_VENV)/.installed:
	$(PYTHON_FOR_VENV) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install -q --upgrade pip
	$(SAM_VENV)/bin/pip install -q aws-sam-cli==1.170.0
	touch $@

sam-venv: $(SAM_VENV)/.installed

## run: start the local stack (moto + HTTP endpoint + demo data) on http://127.0.0.1:$(PORT)
run: venv
	PORT=$(PORT) $(PY) -m infra.local.server

## test: lint, type-check, then every test (unit, integration over HTTP, infra checks of the template)
test: venv sam-venv
	$(PY) -m ruff check .
	$(PY) -m mypy
	SAM_CLI=$(abspath $(SAM)) $(PY) -m pytest -n 2 --dist loadfile

test-fast: venv
	$(PY) -m pytest -n 2 --dist loadfile -m "not slow"

lint: venv
	$(PY) -m ruff check .
	$(PY) -m mypy

validate: venv sam-venv
	$(VENV)/bin/cfn-lint template.yaml
	$(SAM) validate --lint --region $(REGION)

build: sam-venv
	PATH="$(dir $(PYTHON_FOR_VENV)):$$PATH" $(SAM) build --cached --parallel

deploy: build
	$(SAM) deploy --config-env $(STAGE)

bench: venv
	$(PY) -m bench.run

pr: lint test

clean:
	rm -rf $(VENV) $(SAM_VENV) .aws-sam .pytest_cache .mypy_cache .ruff_cache
