# Entry points. `make run` and `make test` work on a fresh clone (they create the venvs).
SHELL := /bin/bash
PY313 := $(shell ls -d $$HOME/.pyenv/versions/3.13*/bin/python3.13 2>/dev/null | tail -1 || true)
PY313 := $(or $(PY313),$(shell for p in /usr/local/bin/python3.13 /usr/bin/python3.13; do [ -x $$p ] && echo $$p && break; done))
PYTHON_FOR_VENV := $(if $(PY313),$(PY313),python3)
VENV := .venv
PY := $(VENV)/bin/python
SAM_VENV := .venv-sam
SAM := $(SAM_VENV)/bin/sam
# checkov pins packaging<24 (the SAM CLI needs a newer one): its own venv, its own pinned version.
CHECKOV_VENV := .venv-checkov
CHECKOV := $(CHECKOV_VENV)/bin/checkov
CHECKOV_VERSION := 3.3.30
PORT ?= 3000
REGION ?= eu-west-1
STAGE ?= dev

.PHONY: system-deps venv sam-venv checkov-venv checkov run wecom-say test test-fast lint validate build deploy bench eval pr token job dispatch demo-jobs openapi reminders clean console-screenshots console-vendor

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON_FOR_VENV) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	# the Lambda layer's package on the venv's path (lint-imports, python -c, tools run from any folder)
	echo "$(CURDIR)/layers/shared" > "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/agent-memory-layer.pth"
	touch $@

venv: $(VENV)/.installed

## system-deps: Debian packages the tests need (.ci/apt-packages: Chromium and a CJK font for the browser test)
system-deps:
	@missing=""; for p in $$(cat .ci/apt-packages); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

$(SAM_VENV)/.installed:
	$(PYTHON_FOR_VENV) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install -q --upgrade pip
	$(SAM_VENV)/bin/pip install -q aws-sam-cli==1.170.0
	touch $@

sam-venv: $(SAM_VENV)/.installed

$(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION):
	$(PYTHON_FOR_VENV) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install -q --upgrade pip
	$(CHECKOV_VENV)/bin/pip install -q checkov==$(CHECKOV_VERSION)
	touch $@

checkov-venv: $(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION)

## checkov: the security scan of template.yaml (0 failed checks; skips carry their reason in each resource's Metadata)
checkov: checkov-venv
	BC_SKIP_MAPPING=TRUE $(CHECKOV) -f template.yaml --framework cloudformation --compact --quiet --skip-download

## run: start the local stack (moto + HTTP endpoint + demo data) on http://127.0.0.1:$(PORT)
run: venv
	PORT=$(PORT) $(PY) -m infra.local.server

## reset: delete the local stack's stored data (.local/data: every table of `make run`); refused while the server runs
.PHONY: reset
reset: venv
	$(PY) -m infra.local.moto_persistence reset "$(or $(LOCAL_DATA_DIR),.local/data)"

## wecom-say: say TEXT to the assistant as WeCom member USER would (signed, encrypted, to demo-iit's
## callback of the running `make run` stack) and print the answer the WeCom emulator received:
##   make wecom-say USER=crc.li TEXT="P001 入组了吗？"
wecom-say: venv
	@test -n "$(TEXT)" -a "$(origin USER)" = "command line" || { echo 'usage: make wecom-say USER=crc.li TEXT="P001 入组了吗？" [PROJECT=demo-iit]'; exit 2; }
	@$(PY) -m infra.wecom_say --user "$(USER)" --text "$(TEXT)" $(if $(filter command line,$(origin PROJECT)),--project "$(PROJECT)")

## token: print a dev JWT the local API accepts (the token alone on the last line), e.g.
##   TOKEN=$$(make -s token USER=dev PROJECT=demo-iit ROLE=admin | tail -1)
## PROJECT takes several ids (demo-iit,demo-clinic) and per-project roles (demo-iit:admin,demo-clinic:member).
token: venv
	@$(PY) -m infra.local.token --user "$(or $(USER),dev)" --project "$(or $(PROJECT),demo-iit)" --role "$(or $(ROLE),member)" $(if $(STUDY_ROLE),--study-role "$(STUDY_ROLE)")

## job: run a background job by hand (backfill) for one project and the period DATE names:
##   make job JOB=distill|archive|prune PROJECT=<id> DATE=YYYY-MM-DD   (archive: the ISO week containing DATE)
##   make job JOB=scrub PROJECT=<id> [DATE=YYYY-MM-DD]   (the one-off identifier scrub of what the project stores)
## against the running `make run` stack; AWS=1 sends it to the deployed queue of STAGE instead.
job: venv
	@test -n "$(JOB)" -a -n "$(PROJECT)" -a \( -n "$(DATE)" -o "$(JOB)" = scrub \) || { echo "usage: make job JOB=distill|archive|prune|scrub PROJECT=<id> DATE=YYYY-MM-DD (optional for scrub) [AWS=1 STAGE=dev]"; exit 2; }
	$(PY) -m infra.jobs run --job $(JOB) --project $(PROJECT) $(if $(DATE),--date $(DATE),) $(if $(AWS),--aws --stage $(STAGE),)

## dispatch: a scheduled run as EventBridge Scheduler triggers it (the schedule's Input), then the worker:
##   make dispatch JOB=distill [DATE=<run date>] [AWS=1 STAGE=dev]
dispatch: venv
	@test -n "$(JOB)" || { echo "usage: make dispatch JOB=distill|archive|prune [DATE=YYYY-MM-DD] [AWS=1 STAGE=dev]"; exit 2; }
	$(PY) -m infra.jobs dispatch --job $(JOB) $(if $(DATE),--date $(DATE),) $(if $(AWS),--aws --stage $(STAGE),)

## demo-jobs: against the running `make run` stack, import a day of durable preferences dated a week ago
## (a day and a week that are over), distill the day, archive the week, print the memory and the report
demo-jobs: venv
	$(PY) -m infra.demo_jobs

## reminders: the reminders of a project of the running `make run` stack: make reminders PROJECT=demo-iit [ALL=1]
reminders: venv
	@$(PY) -m infra.local.reminders_cli --project "$(or $(PROJECT),demo-iit)" $(if $(ALL),--all,)

## openapi: regenerate functions/api/openapi.json (served at /v1/openapi.json) from every handler's routes
openapi: venv
	$(PY) -m infra.openapi

## console-screenshots: a PNG of every view of the team console in Chinese and English, as an admin,
## into .local/screenshots/ (its own local stack and data; Debian's Chromium, make system-deps)
console-screenshots: venv system-deps
	$(PY) -m tests.browser.console_screenshots --out .local/screenshots

## console-vendor: fetch the console's browser libraries at their pinned versions from the npm
## registry into functions/admin/static/console/vendor/ (needs npm; see THIRD_PARTY.md there)
console-vendor: venv
	$(PY) -m infra.console_vendor

## test: lint, type-check, then every test (unit, integration over HTTP, infra checks of the template)
test: venv sam-venv checkov-venv system-deps
	$(PY) -m ruff check .
	$(PY) -m mypy
	PYTHONPATH=layers/shared $(VENV)/bin/lint-imports
	SAM_CLI=$(abspath $(SAM)) CHECKOV=$(abspath $(CHECKOV)) $(PY) -m pytest -n 2 --dist loadfile

test-fast: venv
	$(PY) -m pytest -n 2 --dist loadfile -m "not slow"

lint: venv checkov-venv
	$(PY) -m ruff check .
	$(PY) -m mypy
	PYTHONPATH=layers/shared $(VENV)/bin/lint-imports
	$(MAKE) -s checkov

validate: venv sam-venv
	$(VENV)/bin/cfn-lint template.yaml
	$(SAM) validate --lint --region $(REGION)

build: sam-venv
	PATH="$(dir $(PYTHON_FOR_VENV)):$$PATH" $(SAM) build --cached --parallel
	# Ship bytecode: Lambda's file system is read-only, so without it every cold start compiles
	# every module again. Python 3.13 (the functions' runtime); unchecked-hash: the zip's
	# timestamps do not matter.
	$(PYTHON_FOR_VENV) -m compileall -q -j 0 --invalidation-mode unchecked-hash .aws-sam/build

deploy: build
	$(SAM) deploy --config-env $(STAGE)

bench: venv
	$(PY) -m bench.run

## eval: quality figures (distillation month replayed through the jobs, routing, symptoms) -> eval/results.json
##   make eval [MONTH=path/to/month.json] [LABEL=before|after] [PROVIDER=offline|anthropic]
eval: venv
	$(PY) -m eval.run $(if $(MONTH),--month $(MONTH),) $(if $(LABEL),--label $(LABEL),) $(if $(PROVIDER),--provider $(PROVIDER),)

pr: lint test

clean:
	rm -rf $(VENV) $(SAM_VENV) $(CHECKOV_VENV) .aws-sam .pytest_cache .mypy_cache .ruff_cache
