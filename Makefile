# Capataz — `make run` sets everything up and starts it; `make test` runs the suite.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
HOST ?= 127.0.0.1

.PHONY: run test lint venv migrate demo serve worker messages clean

$(VENV)/.installed: requirements.txt
	@PYTHON_BIN=$$(.ci/find-python) || exit 1; \
	if [ ! -x $(PY) ]; then echo "Creating $(VENV) with $$PYTHON_BIN"; "$$PYTHON_BIN" -m venv $(VENV); fi
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $@

venv: $(VENV)/.installed

migrate: venv
	$(PY) manage.py migrate --noinput

demo: migrate
	SITE_URL=$${SITE_URL:-http://$(HOST):$(PORT)} $(PY) manage.py load_demo

# daphne serves HTTP and websockets (and, on the embedded default, runs the turns on its own
# worker threads); one Celery worker runs the other jobs with beat embedded (-B). Ctrl-C stops all.
run: demo
	@echo ""
	@echo "Capataz is starting on http://$(HOST):$(PORT)/  (Ctrl-C stops it)"
	@echo ""
	@trap 'kill 0' EXIT INT TERM; \
	$(VENV)/bin/celery -A capataz worker -B -Q celery,turns --pool=threads --concurrency=2 \
		--loglevel=WARNING & \
	$(VENV)/bin/daphne -b $(HOST) -p $(PORT) capataz.asgi:application

serve: venv
	$(VENV)/bin/daphne -b $(HOST) -p $(PORT) capataz.asgi:application

worker: venv
	$(VENV)/bin/celery -A capataz worker -B -Q celery,turns --pool=threads --concurrency=2 \
		--loglevel=INFO

# The browser tests run in a process of their own: their server is a child process forked from
# pytest, and it must not inherit what hundreds of earlier tests left in the parent.
# PYTEST_WORKERS=N spreads the rest of the suite over N pytest-xdist processes (CI does, on
# PostgreSQL + Redis, where the suite waits more than it computes).
test: venv
	$(PY) -m pytest -m "not browser" $(if $(PYTEST_WORKERS),-n $(PYTEST_WORKERS) --dist worksteal) $(PYTEST_ARGS)
	$(PY) -m pytest -m browser $(PYTEST_ARGS); status=$$?; [ $$status -eq 0 ] || [ $$status -eq 5 ]

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy .
	@# The bottom floor and the NLU are held to --strict; silent: the apps they reach through the
	@# Django plugin are checked by the run above, at its own settings.
	$(VENV)/bin/mypy --strict --follow-imports=silent common nlu
	$(VENV)/bin/lint-imports

messages: venv
	$(PY) manage.py makemessages -l es_AR -i .venv -i var
	$(PY) manage.py compilemessages -i .venv

clean:
	rm -rf var
