# Two commands: `make demo` (set up + run the main job on the embedded default) and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.stridegen-installed
# sam2 is in by default so that CI runs the SAM 2 test (+~30 s of install: the torch wheel is local; docs/sam2.md).
EXTRAS ?= dev,sam2
DEMO_OUT ?= out/demo

.PHONY: setup demo test lint bench clean

# Debian packages the installed extras need (open3d needs libusb; none for the base install).
APT_PACKAGES ?=

$(STAMP): pyproject.toml Makefile
	@if [ -n "$(APT_PACKAGES)" ]; then \
	  missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	  if [ -n "$$missing" ]; then apt-get update -qq && apt-get install -y -qq $$missing; fi; fi
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@# torch first, as the local CPU build, when an extra needs it (otherwise pip pulls a CUDA build).
	@if echo "$(EXTRAS)" | grep -qE 'torch|sam2|mmdet3d'; then $(BIN)/pip install -q torch==2.13.0; fi
	$(BIN)/pip install -q -e ".[$(EXTRAS)]"
	@# sam2 (a source package) requires torchvision, which has no CPU build: install sam2 without its requirements
	@# (the rest come with the `sam2` extra) and without its optional CUDA extension, built against the torch above.
	@if echo "$(EXTRAS)" | grep -qE 'sam2'; then \
	  SAM2_BUILD_CUDA=0 $(BIN)/pip install -q --no-deps --no-build-isolation sam2==1.1.0; fi
	@# nuscenes-devkit pins numpy<2 and matplotlib<3.6 (no build on py3.11): install it without its pins;
	@# its real requirements come with the `devkit` extra.
	@if echo "$(EXTRAS)" | grep -qE 'dev'; then $(BIN)/pip install -q --no-deps nuscenes-devkit==1.2.0; fi
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/stridegen build --out $(DEMO_OUT) --overwrite

lint: setup
	$(BIN)/ruff check stridegen tests benchmarks

test: setup lint
	$(BIN)/python -m pytest -n 2 -q

bench: setup
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) out test-output .pytest_cache .ruff_cache
