# The project's single entry point. `make test` is the README's test command and what
# .ci/run runs; `make demo` is the README's main command.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test demo lint typecheck docker images helm install unit clean

test: docker images install helm lint typecheck
	$(PY) -m pytest -q -ra --durations=15

demo: docker images install
	bash scripts/demo.sh

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

docker:
	bash scripts/ensure-docker.sh

images: docker
	bash scripts/build-test-images.sh

helm: install
	bash scripts/ensure-helm.sh $(VENV)/bin/helm

lint: install
	$(VENV)/bin/ruff check vk_provider tests
	$(VENV)/bin/ruff format --check vk_provider tests

typecheck: install
	$(VENV)/bin/mypy

unit: install
	$(PY) -m pytest -q tests/unit

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
