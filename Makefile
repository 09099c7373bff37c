# minbw — the two commands: `make demo` and `make test`. Each sets itself up from a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := $(CURDIR)/.venv
PY := $(VENV)/bin/python
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

.PHONY: setup collection cloud-install cloud-databases tempest-venv tour-venv collection-readme dist container docs demo test unit functional ansible faults prodplacement e2e tempest sanity lint bench cloud-up cloud-down prod-placement-up prod-placement-down prod-placement-status clean

# A virtualenv at $(1) unless there is one. Debian's own python3 needs python3-venv for `-m venv`; installed only when
# venv is missing.
make-venv = test -x $(1)/bin/python || $(PYTHON) -m venv $(1) || { apt-get update -qq && apt-get install -y -qq python3-venv && $(PYTHON) -m venv $(1); }

setup: $(VENV)/.setup-done

# (pip install through uv: tests/support/lib/pip_install.sh, as every set-up step's virtualenv)
$(VENV)/.setup-done: python/pyproject.toml requirements-test.txt
	$(call make-venv,$(VENV))
	bash tests/support/lib/pip_install.sh $(VENV) -q --upgrade pip
	bash tests/support/lib/pip_install.sh $(VENV) -q -e 'python[placement,exporter,dataplane]' -r requirements-test.txt
	# openstack.cloud, the collection's dependency, into .venv/collections (from PyPI: Galaxy is not reached)
	bash tests/support/ansible/install_openstack_cloud.sh
	$(MAKE) --no-print-directory bytecode
	touch $@

# minbw's own modules and the tests' support code compiled once (uv compiles what it installs, not the editable
# tree): shells that set PYTHONDONTWRITEBYTECODE (this machine's do) otherwise make every process that imports minbw
# (each CLI command, each module a playbook runs, each claimer) compile it again: about 0.2 CPU s for all of minbw
.PHONY: bytecode
bytecode:
	$(PY) -m compileall -q -j0 python tests/support bench docs/site

# The collection built (python/build_collection.py: its core generated from python/minbw into
# plugins/module_utils/core, which git does not hold) and installed into .venv/collections.
collection: setup
	bash tests/support/ansible/install_collection.sh

# README.collection.md's lists of modules, roles, filters and playbooks, from the collection itself
# (docs/site/collection_readme.py; tests/ansible/test_shipped_docs.py fails until it is run after a change).
collection-readme: setup
	$(PY) docs/site/collection_readme.py

# The documentation site, build/docs/html/index.html (docs/site/build.sh): antsibull-docs and Sphinx, warnings
# are errors. docs/site/screenshot.sh OUT PAGE... shows pages as Chromium renders them.
docs: setup
	bash docs/site/build.sh

# Every artefact, one version (galaxy.yml = python/pyproject.toml = minbw.__version__, tests/ansible/test_packaging.py):
# dist/minbw-openstack-VERSION.tar.gz (the collection, its core generated from python/minbw into
# plugins/module_utils/core by python/build_collection.py) and the command line's dist/minbw-VERSION-py3-none-any.whl
# and dist/minbw-VERSION.tar.gz. Built in a virtualenv of its own with only the two builders (`build`, and
# ansible-core for `ansible-galaxy collection build`, in requirements-test.txt's range), not the test stack of
# `make setup`.
# (DIST_VENV from the environment: another checkout's, as tests/ansible/test_packaging.py's fresh clone takes.)
DIST_VENV ?= $(CURDIR)/.state/dist-venv

$(DIST_VENV)/.done:
	$(call make-venv,$(DIST_VENV))
	$(DIST_VENV)/bin/python -m pip install -q 'build>=1.0' 'ansible-core>=2.16,<2.20'
	touch $@

dist: $(DIST_VENV)/.done
	rm -rf dist
	$(DIST_VENV)/bin/python python/build_collection.py --output-path dist
	$(DIST_VENV)/bin/python -m build --outdir dist python
	ls dist

# The exporter's container image (contrib/container/Containerfile) built from the wheel with buildah and run
# (tests/ansible/test_container_image.py; buildah and debootstrap installed from Debian's packages when missing);
# `make test` skips it (MINBW_CONTAINER unset).
container: setup
	MINBW_CONTAINER=1 $(PY) -m pytest -q tests/ansible/test_container_image.py

demo: setup collection
	$(VENV)/bin/ansible-playbook playbooks/demo.yml

# The mini-cloud's and the production-style Placement's venv (.venv-cloud) and Debian packages (MariaDB,
# RabbitMQ; galera-4 and HAProxy for the Galera Placement): installed once here, before suites that use them run
# side by side (some in a network namespace, where no package registry is reachable); and the mini-cloud's
# databases migrated once, kept as the snapshot each cloud of the run restores (cloud.sh snapshot; a no-op when
# current); tempest in a venv of its own (tests/support/tempest/tempest.sh install; a no-op when current), the two
# independent (side by side under `make -j`, as `make test` runs its set-up).
cloud-install: cloud-databases tempest-venv

cloud-databases:
	bash tests/support/minicloud/cloud.sh install
	bash tests/support/galera/galera.sh install
	bash tests/support/minicloud/cloud.sh snapshot

tempest-venv:
	bash tests/support/tempest/tempest.sh install

# The virtualenv README.md's install block makes, as a user runs it (the block as written, in a home of its own under
# .state/tour/KEY, KEY: python/pyproject.toml, the block and python3), where tests/functional/test_readme_tour.py
# runs the tour: made from the package registry once per KEY, the block run again when only python/ changed
# (tests/support/tour.py; a no-op when current).
tour-venv: setup
	$(PY) tests/support/tour.py

# `make test`: every suite, in parallel lanes (tests/support/run_suites.py: e2e | a second mini-cloud's e2e |
# galera + prodplacement + unit | functional+ansible | ansible | sanity+lint+faults), then the time per suite and the 20 slowest tests; fails when a test fails.
# Its set-up (setup, collection, cloud-install, tour-venv) is done first, its independent steps side by side (make -j:
# the .venv then the collection and the tour's venv | the mini-cloud's venv then its snapshot | tempest's venv;
# tests/README.md's "Where the time goes"). The .venv is made first, alone: on a machine without python3-venv that
# installs it with apt, before the steps side by side make virtualenvs and run apt themselves. tests/README.md: the suites.
test:
	$(call make-venv,$(VENV))
	$(MAKE) -j4 --output-sync=line setup collection cloud-install tour-venv
	$(MAKE) --no-print-directory bytecode
	$(PY) tests/support/run_suites.py

# One suite alone (tests/README.md has what each runs against and its time budget):
unit: setup
	$(PY) -m pytest -q tests/unit

functional: setup collection tour-venv
	$(PY) -m pytest -q tests/functional

ansible: setup collection
	$(PY) -m pytest -q tests/ansible

faults: setup collection
	$(PY) -m pytest -q tests/faults

prodplacement: setup cloud-install
	$(PY) -m pytest -q tests/prodplacement

e2e: setup collection cloud-install
	$(PY) -m pytest -q tests/e2e

# tempest's own QoS-placement scenario suite (tempest.scenario.test_network_qos_placement), every test of it, against
# the mini-cloud with minbw reporting the providers (docs/tempest.md: each test's outcome and time); `make test` runs
# its reduced form in the e2e lane (tests/e2e/test_tempest_qos_placement.py)
tempest: setup cloud-install
	MINBW_TEMPEST=full $(PY) -m pytest -q tests/e2e/test_tempest_qos_placement.py

sanity: setup
	bash tests/support/ansible/sanity.sh

lint: setup
	bash tests/support/ansible/lint.sh

bench: setup
	$(PY) bench/run.py

cloud-up: setup
	bash tests/support/minicloud/cloud.sh up

cloud-down:
	bash tests/support/minicloud/cloud.sh down

# The production-style Placement (uWSGI workers on its own MariaDB; docs/benchmarks.md): ports 18778/13406,
# state in .state/prodplacement. PRODPLACEMENT_AUTH=keystone adds a real Keystone (port 15400);
# PRODPLACEMENT_WORKERS, PRODPLACEMENT_TOKEN_EXPIRATION, PRODPLACEMENT_CONFLICT_RETRIES (default 10, upstream's),
# PRODPLACEMENT_PATCHED=1 (patches/placement applied): see tests/support/prodplacement/prodplacement.sh.
prod-placement-up: setup
	bash tests/support/prodplacement/prodplacement.sh up

prod-placement-down:
	bash tests/support/prodplacement/prodplacement.sh down

prod-placement-status:
	bash tests/support/prodplacement/prodplacement.sh status

# Placement as deployments run it (docs/galera.md): three MariaDB Galera nodes, two Placement API processes
# (uWSGI) and HAProxy in front of both, on one machine; state in .state/galera, Placement on 127.0.0.1:28778.
# GALERA_MODE=single-writer (kolla-ansible's default) or multi-writer, GALERA_PATCHED=1, GALERA_WORKERS,
# GALERA_CONFLICT_RETRIES, GALERA_DB_CHECK (HAProxy's check of the nodes: clustercheck, mysql, tcp), GALERA_SYNC_WAIT
# (Placement's sessions' wsrep_sync_wait, 1): see tests/support/galera/galera.sh. `make galera` runs its tests, the full set;
# `make test` runs their reduced form (MINBW_GALERA=reduced, in the placement lane: one claim storm and one fault,
# single-writer); without MINBW_GALERA tests/galera is skipped. `make galera` runs in a network and mount namespace
# of its own (unshare, tests/support/netns.py): the fault injector's drop_link (tests/support/galera/faults.py) puts
# tc on that namespace's loopback, fill_disk's file systems are mounted there; MINBW_GALERA_SEED replays its targets.
.PHONY: galera galera-up galera-down galera-status
galera-up: setup
	bash tests/support/galera/galera.sh up

galera-down:
	bash tests/support/galera/galera.sh down

galera-status:
	bash tests/support/galera/galera.sh status

galera: setup cloud-install
	MINBW_GALERA=1 unshare --net --mount -- $(PY) tests/support/netns.py $(PY) -m pytest -q -rP --show-capture=stdout tests/galera

# The soak (docs/soak.md): every writer and reader of minbw at once for SOAK_S seconds (default 600) on
# SOAK_TOPOLOGY (prod: the production-style Placement; galera; both; cloud: a mini-cloud of its own, with servers,
# moves, audit and heal: soak-cloud below), faults injected at random from SOAK_SEED
# (default: a new seed, printed); the report in .state/soak/TOPOLOGY-SEED/. `make test` runs a reduced form
# (tests/prodplacement/test_soak.py). Needs root (its own network and mount namespace).
SOAK_S ?= 600
SOAK_TOPOLOGY ?= prod
SOAK_SEED ?=
SOAK_HOSTS ?=
.PHONY: soak
SOAK_ARGS = --seconds $(SOAK_S) $(if $(SOAK_HOSTS),--hosts $(SOAK_HOSTS)) $(if $(SOAK_SEED),--seed $(SOAK_SEED))
soak: setup cloud-install
	@set -e; for t in $(if $(filter both,$(SOAK_TOPOLOGY)),prod galera,$(SOAK_TOPOLOGY)); do \
	    if [ $$t = cloud ]; then $(MAKE) --no-print-directory soak-cloud; continue; fi; \
	    PYTHONPATH=$(CURDIR)/python:$(CURDIR) $(PY) -m tests.support.soak.runner --netns --topology $$t $(SOAK_ARGS); \
	done

# the cloud topology: a mini-cloud of its own (its state in .state/minicloud-soak, two computes in service) in a
# network namespace of its own, started before the runner (which adopts it) and stopped after
.PHONY: soak-cloud
soak-cloud: setup cloud-install
	MINICLOUD_STATE=$(CURDIR)/.state/minicloud-soak unshare --net --mount -- $(PY) tests/support/netns.py bash -c \
	    'bash tests/support/minicloud/cloud.sh up >/dev/null || exit 1; \
	     PYTHONPATH=$(CURDIR)/python:$(CURDIR) $(PY) -m tests.support.soak.runner --topology cloud $(SOAK_ARGS); \
	     rc=$$?; bash tests/support/minicloud/cloud.sh down >/dev/null; exit $$rc'

# The cloud soak's test (tests/e2e/test_soak_cloud.py): the command docs/soak.md shows under "Run it on the
# mini-cloud", on the two-host mini-cloud the e2e fixtures start, in a network namespace of its own; not in
# `make test` (its cost: docs/soak.md)
.PHONY: soak-cloud-test
soak-cloud-test: setup cloud-install
	MINBW_SOAK_CLOUD=1 MINICLOUD_STATE=$(CURDIR)/.state/minicloud-soak unshare --net --mount -- $(PY) tests/support/netns.py \
	    $(PY) -m pytest -q -rP --show-capture=stdout tests/e2e/test_soak_cloud.py

clean:
	rm -rf $(VENV) .venv-cloud .state
