# The two commands of the README: `make run` and `make test`. Everything else is optional.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: compiled test-compiled py312-env run test test-slow test-pure install dev lint vulture locust-env asan-test test-pyvers bench-regions bench bench-parse bench-render bench-cache bench-events bench-peers bench-peers-short bench-peers-callgrind bench-sweep bench-sweep-short bench-locust bench-table1 bench-db bench-db-pages bench-sessions bench-compression bench-jobs fuzz fuzz-atheris soak docs lab clean test-cluster bench-push test-grade test-notebooks-extra

# A stamp file per install level: re-run pip only when the packaging files change.
$(VENV)/.installed: pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.dev-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed
dev: $(VENV)/.dev-installed

## make run: the learning server: serve the example site (SITE) on http://127.0.0.1:8000 in
## development mode (changed and new pages picked up on the next request, tracebacks on
## error pages); `make run PORT=8001` picks another port. Production: pyweb serve DIR.
## (exec: the server is make's own child, so it stops when make goes: cli._stop_with_parent)
SITE ?= pages
run: install
	PYWEB_MAKE_RUN=1 exec $(PY) -m pyweb serve $(SITE) --dev --host $(HOST) --port $(PORT)

## make lab: the tutorials and exercises in JupyterLab on 127.0.0.1 (prints the URL with its token)
LAB_PORT ?= 8888
lab: install
	$(PY) -m pip install --quiet -e '.[notebooks]'
	@echo "JupyterLab: open the URL with ?token=... printed below (tutorials/ and notebook/ are in the file browser); Ctrl-C stops it"
	$(PY) -m jupyter lab --no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) \
	  --ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/tutorials $(if $(filter 0,$(shell id -u)),--allow-root)

## every tutorial and exercise solution run on a real kernel in a fresh venv that has the
## `notebooks` extra alone (no dev packages): what a student's `make lab` or a JupyterHub
## image has is enough (scripts/run_notebooks.py; a few minutes with the install)
NB_VENV := build/nb-venv
NB_ARGS ?=
test-notebooks-extra:
	rm -rf $(NB_VENV)
	$(PYTHON) -m venv $(NB_VENV)
	$(NB_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(NB_VENV)/bin/python -m pip install --quiet -e '.[notebooks]'
	$(NB_VENV)/bin/python scripts/run_notebooks.py $(NB_ARGS)

## make test: every test (unit, property-based, integration over real sockets), the server
## tests on both loops (trio and asyncio), but the suites of minutes (marked slow: make
## test-slow; CI runs both). Two parts: most tests spread over TEST_JOBS processes
## (pytest-xdist), then the timing-sensitive ones (marked serial: a normal client's wait
## under attack; SERIAL_TESTS, the folders of tests/conftest.py's SERIAL_DIRS, so the
## second part collects only them) alone.
## One loop only: make test LOOPS=trio (or PYWEB_TEST_LOOPS=trio); more options: TEST_ARGS=...
TEST_JOBS ?= 2
LOOPS ?= trio,asyncio
SERIAL_TESTS := tests/reliability
test: dev
	$(PY) -m pytest -n $(TEST_JOBS) --dist load -m "not serial and not slow" --loops $(LOOPS) $(TEST_ARGS)
	$(PY) -m pytest -m "serial and not slow" --loops $(LOOPS) $(SERIAL_TESTS) $(TEST_ARGS)

## make test-slow: the suites of minutes that make test leaves out (marked slow): every
## notebook run on a Jupyter kernel, pyweb grade's class of hand-ins in the bubblewrap
## sandbox, every wrong answer of the exercises graded to fail, and locust's load tests
test-slow: dev locust-env
	@command -v bwrap >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap)
	$(PY) -m pytest -n $(TEST_JOBS) --dist load -m slow --loops $(LOOPS) $(TEST_ARGS)

## the optional compiled build: pyweb's hot plain modules compiled by mypyc into a copy of
## the package in build/mypyc (scripts/build_compiled.py lists which, and why the others are
## not); the plain modules stay the reference, and make dev never builds it. Run with it:
## PYTHONPATH=build/mypyc .venv/bin/pyweb serve pages (not python -m: that puts the tree first)
compiled: dev
	$(PY) scripts/build_compiled.py

## the protocol tests (h11 as the oracle) and the connection tests on both loops against the
## compiled build: a differential run, the plain modules as the reference
COMPILED_TESTS ?= tests/protocol tests/server/test_aio.py tests/server/test_connection.py
test-compiled: compiled
	PYTHONPATH=build/mypyc:scripts $(VENV)/bin/pytest -p compiled_plugin \
	  -n $(TEST_JOBS) --dist load -m "not serial" --loops $(LOOPS) $(COMPILED_TESTS) $(TEST_ARGS)

## Python 3.12 with the uvloop extra in build/py312: peers.py's pyweb-asyncio-py312
PY312 ?= $(shell ls -d $(PYENV_ROOT)/versions/3.12.*/bin/python3 2>/dev/null | sort -V | tail -n 1)
py312-env:
	test -x build/py312/bin/python || $(PY312) -m venv build/py312
	build/py312/bin/python -m pip install --quiet -e '.[uvloop]' pytest pytest-timeout hypothesis h11 trustme

## the protocol, server, regions and site tests with no C at all (PYWEB_REGIONS=python: the
## Python parser, framer and regions, as on a machine without a compiler); make test runs
## them with the C fast paths, which their differential tests hold to the Python paths
test-pure: dev
	PYWEB_REGIONS=python $(PY) -m pytest -n $(TEST_JOBS) --dist load -m "not serial" \
	  --loops $(LOOPS) tests/protocol tests/server tests/regions tests/app $(TEST_ARGS)

## locust in its own environment (pyweb loadtest, the load-testing tests and tutorial)
locust-env: install
	$(PY) -c "from pyweb.testing.loadtest import ensure_locust; ensure_locust()"

## pyweb grade alone: a class of attack hand-ins graded in the bubblewrap sandbox, and every
## wrong answer of the exercise sets graded to fail (about 3 minutes; make test-slow runs them too)
test-grade: dev
	@command -v bwrap >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap)
	$(PY) -m pytest tests/test_grade.py tests/notebook $(TEST_ARGS)

## two hosts (network namespaces) each running `pyweb serve --workers 2`, behind nginx,
## sharing PostgreSQL and Redis: writes through nginx while a host is killed, push across
## hosts, sessions across hosts; prints a table (root only; installs nginx if missing)
CLUSTER_ARGS ?=
test-cluster: dev
	@command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx)
	PATH="$$PATH:/usr/sbin" $(PY) tests/cluster/cluster.py $(CLUSTER_ARGS)

## a new site from `pyweb new` behind nginx: pyweb serve --workers 2 with a Redis cache, nginx in
## the foreground with the configuration docs/production.md shows; a page, a POST with its CSRF
## token, a WebSocket and a forged address through it; prints a transcript (installs nginx if
## missing; needs Redis on 127.0.0.1:6379)
.PHONY: demo-nginx
demo-nginx: dev
	@command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx)
	PATH="$$PATH:/usr/sbin" $(PY) scripts/demo_nginx.py

## the Autobahn WebSocket test suite (an independent RFC 6455 client, Python 2.7 from pyenv,
## installed by tests/autobahn/install.sh) against the echo of tests/autobahn/echo_site served by
## pyweb on trio, on asyncio and under uvicorn (pyweb.asgi); a summary per server, and a
## non-zero exit on any FAILED case. The whole suite (517 cases) takes about 70 s on pyweb's
## server for sections 1-11 and many minutes more for permessage-deflate (sections 12-13: 216
## cases of 1,000 compressed messages each); the short one (sections 1-7,
## 10, a few cases of 12-13) 20-40 s a server. AUTOBAHN_ARGS="--servers pyweb-trio" picks servers.
AUTOBAHN_ARGS ?=
.PHONY: test-autobahn test-autobahn-short
test-autobahn: dev
	bash tests/autobahn/install.sh
	$(PY) tests/autobahn/run.py --cases all $(AUTOBAHN_ARGS)

test-autobahn-short: dev
	bash tests/autobahn/install.sh
	$(PY) tests/autobahn/run.py --cases short $(AUTOBAHN_ARGS)

## push across processes (shared multicast cost, latency to another worker) and the
## WebSocket echo round trip against uvicorn + websockets, one core each
BENCH_PUSH_ARGS ?=
bench-push: dev
	$(PY) -m pip install --quiet uvicorn
	$(PY) benchmarks/bench_push.py $(BENCH_PUSH_ARGS)

## make lint: ruff (with a complexity limit on server/ and protocol/) and mypy, 0 errors
lint: dev
	$(PY) -m ruff check pyweb tests benchmarks
	$(PY) -m mypy

## dead code in pyweb/: what vulture finds unused there, less scripts/vulture_allow.py's names
## (each with its reason); tests/test_dead_code.py asks the same in make test
vulture: dev
	$(PY) -m vulture pyweb tests pages benchmarks scripts/vulture_allow.py --exclude "*/.venv*,*/py27/*" | grep '^pyweb/' \
	  && exit 1 || echo "no dead code in pyweb/"

## the regions, protocol, server and site tests (every request is read into an arena page,
## its head parsed by the C request head, and every reply sent from one, its head framed by
## the C framer) against pyweb_regions' C modules built with AddressSanitizer in build/asan
## (libasan preloaded, Python's own allocator off so ASan sees every object); the in-tree
## build is not touched
ASAN_DIR := build/asan
EXT_SUFFIX := $(shell $(PY) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))" 2>/dev/null)
ASAN_MODULES := _regions _frame _head
asan-test: dev
	mkdir -p $(ASAN_DIR)
	for m in $(ASAN_MODULES); do \
	  gcc -shared -fPIC -O1 -g -fsanitize=address -fno-omit-frame-pointer -Wall \
	    -I$$($(PY) -c "import sysconfig; print(sysconfig.get_paths()['include'])") \
	    pyweb_regions/$$m.c -o $(ASAN_DIR)/$$m$(EXT_SUFFIX) || exit 1; \
	done
	LD_PRELOAD=$$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \
	  PYTHONMALLOC=malloc PYWEB_REGIONS_EXT=$(abspath $(ASAN_DIR)) \
	  $(PY) -m pytest tests/regions tests/protocol tests/server tests/app --framers c \
	  -q -p no:cacheprovider $(ASAN_ARGS)

## tests/regions and the snapshot benchmark (section 1 of bench-regions) under the other
## Pythons pyenv has: the C guard's fast check is a dict watcher on 3.12+, the version tag on
## 3.11. One venv per version in build/pyvers/ (the extension is built in place for its ABI);
## a version pyenv does not have is skipped with a message.
PYENV_ROOT ?= $(HOME)/.pyenv
PYVERS ?= 3.12 3.13
test-pyvers:
	@for v in $(PYVERS); do \
	  py=$$(ls -d $(PYENV_ROOT)/versions/$$v.*/bin/python3 2>/dev/null | sort -V | tail -n 1); \
	  if [ -z "$$py" ]; then echo "test-pyvers: no Python $$v in $(PYENV_ROOT), skipped"; continue; fi; \
	  venv=build/pyvers/$$v; echo "== Python $$v ($$py, venv $$venv)"; \
	  test -x $$venv/bin/python || $$py -m venv $$venv || exit 1; \
	  $$venv/bin/python -m pip install --quiet -e . pytest pytest-timeout hypothesis || exit 1; \
	  $$venv/bin/python -m pytest tests/regions -q -p no:cacheprovider || exit 1; \
	  $$venv/bin/python -c "import sys; sys.path.insert(0, 'benchmarks'); \
	    import bench_regions; bench_regions.bench_snapshots(short=True)" || exit 1; \
	done

## snapshot check+restore, arena assembly, bytes per request, RSS soak (200,000 requests)
bench-regions: dev
	$(PY) benchmarks/bench_regions.py $(BENCH_REGIONS_ARGS)

## what a session read and the CSRF check cost per request, beside page-hello (wrk; memory
## cache, or Redis with BENCH_SESSIONS_ARGS="--cache redis://127.0.0.1:6379/0")
bench-sessions: dev
	$(PY) benchmarks/bench_sessions.py $(BENCH_SESSIONS_ARGS)

## what gzip and brotli cost per response size (1 KiB to 1 MiB), beside the same page
## uncompressed and page-hello with and without Accept-Encoding (wrk, the same run)
bench-compression: dev
	$(PY) benchmarks/bench_compression.py $(BENCH_COMPRESSION_ARGS)

## scheduled jobs: the overhead per due job (file and Redis leases), and conn.after per request
## beside page-hello, in-process on trio and asyncio
bench-jobs: dev
	$(PY) benchmarks/bench_jobs.py $(BENCH_JOBS_ARGS)

## micro-benchmarks of the request parser (pyweb vs h11 vs httptools, same run)
bench-parse: dev
	$(PY) -m pytest benchmarks/bench_parse.py --benchmark-only --benchmark-columns=min,median,ops -p no:timeout $(BENCH_PARSE_ARGS)

## micro-benchmarks of page rendering: quotations and HTML nodes vs jinja2 and f-strings
bench-render: dev
	$(PY) -m pytest benchmarks/bench_render.py --benchmark-only --benchmark-columns=min,median,ops -p no:timeout $(BENCH_RENDER_ARGS)

## micro-benchmarks of pyweb.cache (memory and Redis) vs a dict and cachetools.TTLCache
bench-cache: dev
	$(PY) -m pytest benchmarks/bench_cache.py --benchmark-only --benchmark-columns=min,median,ops -p no:timeout $(BENCH_CACHE_ARGS)

## whole-server comparison: pyweb on trio and asyncio beside uvicorn (raw ASGI, Starlette), granian
## (ASGI, RSGI), raw trio and raw uvloop, and the frameworks users pick (FastAPI, Litestar, Sanic,
## BlackSheep, Falcon, Emmett, Robyn, Django, Flask), each in a venv of its own;
## BENCH_PEERS_ARGS="--markdown FILE" also writes the tables
bench-peers: dev
	$(PY) benchmarks/peers.py --frameworks $(BENCH_PEERS_ARGS)

bench-peers-short: dev
	$(PY) benchmarks/peers.py --short $(BENCH_PEERS_ARGS)

## the same servers and URLs under callgrind: instructions per request (steady on a busy machine)
bench-peers-callgrind: dev
	$(PY) benchmarks/peers_callgrind.py $(BENCH_PEERS_CALLGRIND_ARGS)

## CML event benchmarks (CML §5 Tables 3-5 on trio)
bench-events: dev
	$(PY) benchmarks/bench_events.py

## reply rate against offered rate with httperf: Hop Figs. 6-7, Marlow Fig. 1 (plots in docs/img)
bench-sweep: dev
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/sweep.py --plots docs/img

bench-sweep-short: dev
	$(PY) benchmarks/sweep.py --short --servers pyweb,raw-trio

## the locust user scenarios (guessing game, guest book, exchange), headless, for 20 s
bench-locust: dev
	$(PY) benchmarks/load.py --users 20 --time 20s

## SMLserver's Table 1: the eight scripts on pyweb (3 modes), Flask and Starlette, 8 clients
bench-table1: dev
	$(PY) benchmarks/table1.py

## per-query cost of pyweb.db's fold against sqlite3, asyncpg and aiomysql alone (same run)
bench-db: dev
	$(PY) benchmarks/bench_db.py $(BENCH_DB_ARGS)

## Table 1's db/guest/log pages on PostgreSQL and MySQL: pyweb against gunicorn + Flask
bench-db-pages: dev
	$(PY) benchmarks/bench_db_pages.py $(BENCH_DB_PAGES_ARGS)

bench: bench-parse bench-render bench-cache bench-events bench-peers

## the documentation site, built strictly (broken links fail; a raw Sphinx role or "::" left
## in a page fails too: scripts/check_docs_site.py)
docs: dev
	$(PY) -m pip install --quiet -e '.[docs]'
	$(PY) -m mkdocs build --strict --site-dir site
	$(PY) scripts/check_docs_site.py site

## a longer hypothesis campaign on the parser than make test runs
fuzz: dev
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest tests/protocol -p no:timeout -q

## the reliability suite, long (tests/reliability with PYWEB_SOAK=1: each attack for 60 s,
## a 10 s PostgreSQL outage, 20 s of recycling); make test runs the short version
soak: dev
	PYWEB_SOAK=1 $(PY) -m pytest tests/reliability -p no:timeout -s -q

## atheris (coverage-guided) on the request parser, the form parser, quotations and
## pyweb_regions.Arena, each for FUZZ_SECONDS (fuzz/run.py says how); new inputs that reach
## new code are added to fuzz/corpus/, crashes go to fuzz/crashes/. The arena and the parser
## (whose target compares the C request head with the Python one) are then replayed and
## fuzzed again against pyweb_regions' C modules built with ASan + UBSan.
## CI: make fuzz-atheris FUZZ_SECONDS=30 FUZZ_ARGS=--ci (the kept corpus is not changed).
FUZZ_SECONDS ?= 300
FUZZ_TARGETS ?= parser forms quot arena
SAN_DIR := build/asan-ubsan
SAN_ENV = LD_PRELOAD=$$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 PYTHONMALLOC=malloc PYWEB_REGIONS_EXT=$(abspath $(SAN_DIR))
fuzz-atheris: dev
	$(PY) -m pip install --quiet -e '.[fuzz]'
	mkdir -p $(SAN_DIR)
	for m in $(ASAN_MODULES); do \
	  gcc -shared -fPIC -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	    -fno-omit-frame-pointer -Wall \
	    -I$$($(PY) -c "import sysconfig; print(sysconfig.get_paths()['include'])") \
	    pyweb_regions/$$m.c -o $(SAN_DIR)/$$m$(EXT_SUFFIX) || exit 1; \
	done
	for t in $(FUZZ_TARGETS); do \
	  $(PY) fuzz/run.py $$t --seconds $(FUZZ_SECONDS) $(FUZZ_ARGS) || exit 1; \
	done
	for t in arena parser; do \
	  $(SAN_ENV) $(PY) fuzz/run.py $$t --replay || exit 1; \
	  $(SAN_ENV) $(PY) fuzz/run.py $$t --seconds $(FUZZ_SECONDS) --ci || exit 1; \
	done

clean:
	rm -rf $(VENV) build *.egg-info .hypothesis .benchmarks site
