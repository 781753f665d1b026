# NetaClaw: `make run` serves the product, `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
HOST ?= 127.0.0.1
STAMP := $(VENV)/.installed
# the packages the type checker covers (pyproject's [tool.mypy])
TYPED := condense llm compaction agents chat recall system runs web channels_app netaclaw scripted_llm

.PHONY: run worker test test-fast test-e2e install system-deps lint format bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Debian's Chromium for the browser tests (Playwright cannot download browsers here), and a
# CJK font so the Chinese UI in their screenshots is text, not empty boxes.
system-deps:
	@missing=""; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	fc-list 2>/dev/null | grep -qi 'Noto Sans CJK' || missing="$$missing fonts-noto-cjk"; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages for the browser tests:$$missing"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) \
	    || { echo "could not install$$missing (run as root, or apt-get install$$missing)"; exit 1; }; \
	fi

# run_local: admin and demo agent, then Daphne with settings.DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE /
# _FRAME_SIZE (8 MiB: an oversized client frame is answered with an error instead of closing the
# socket at Daphne's default 1 MiB); how to log in is printed once Daphne listens
run: $(STAMP)
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py run_local --host $(HOST) --port $(PORT)

# the job worker (turns, compactions) against DATABASE_URL / REDIS_URL; SIGTERM drains it
# within 30 s. With SQLite jobs run inside `make run`: it says so and exits 0.
worker: $(STAMP)
	$(BIN)/python manage.py run_worker $(WORKER_ARGS)

test: $(STAMP) system-deps
	$(BIN)/python -m pytest tests --ignore=tests/e2e -q $(PYTEST_ARGS)
	@if [ -d tests/e2e ] && ls tests/e2e/test_*.py >/dev/null 2>&1; then \
	  DJANGO_ALLOW_ASYNC_UNSAFE=true $(BIN)/python -m pytest tests/e2e -q -p no:asyncio $(PYTEST_ARGS); \
	fi

test-fast: $(STAMP)
	$(BIN)/python -m pytest tests --ignore=tests/e2e -q -x $(PYTEST_ARGS)

test-e2e: $(STAMP) system-deps
	DJANGO_ALLOW_ASYNC_UNSAFE=true $(BIN)/python -m pytest tests/e2e -q -p no:asyncio $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy $(TYPED)

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) var db.sqlite3
