# gpucast: one entry point for set-up, build, tests, demo, sanitizers, fuzzing
# and benchmarks on a fresh Debian 12 machine. Every target installs what it
# needs first (make deps is idempotent).

BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
PY         := /usr/bin/python3

# Build and test dependencies (Debian 12 package names).
DEB_BUILD := cmake ninja-build g++ clang pkg-config dpkg-dev \
  libonnx-dev libprotobuf-dev protobuf-compiler libxgboost-dev nlohmann-json3-dev \
  libcli11-dev libfmt-dev libspdlog-dev libcpp-httplib-dev libsqlite3-dev sqlite3 \
  libgtest-dev libgmock-dev libbenchmark-dev libclang-rt-14-dev time libssl-dev
# Live Slurm integration test (lua5.1: the plugin's offline test; jq: the epilog; sudo: the
# SlurmUser=slurm recipe) and the HTTP load test.
DEB_CLUSTER := slurmctld slurmd slurm-client munge curl wrk lua5.1 lua-socket jq sudo
# Kubernetes test (tests/k8s_test.sh): openssl makes the throwaway CA, kubectl applies the
# webhook's patches offline, python3-yaml reads the manifests. Debian's kubectl is the
# kubernetes-client package; a kubectl already installed from elsewhere (e.g. Google's
# kubectl package, which owns /usr/bin/kubectl and conflicts with it) is used instead.
DEB_K8S := openssl python3-yaml $(if $(shell command -v kubectl 2>/dev/null),,kubernetes-client)
# Graph export and the measurement harness (python side).
DEB_PY := python3-torch python3-torchvision python3-onnx python3-numpy
# The HTML report's browser test (tests/report_chromium.sh).
DEB_BROWSER := chromium
DEB_ALL := $(DEB_BUILD) $(DEB_CLUSTER) $(DEB_K8S) $(DEB_PY) $(DEB_BROWSER)

.PHONY: all deps deps-py build test demo sanitize fuzz bench clean help install deb docs image slurm-test-24.11

all: build

help:
	@echo "make deps      install Debian packages (idempotent)"
	@echo "make build     build $(BUILD)/gpucast"
	@echo "make test      deps + build + all tests"
	@echo "make demo      deps + build + the main job"
	@echo "make sanitize  ASan/UBSan build + tests"
	@echo "make fuzz      every ONNX op schema as a single-node graph (SWEEP_CASES, SWEEP_SEEDS), then libFuzzer:"
	@echo "               ONNX loader FUZZ_SECONDS (60), HTTP service HTTP_FUZZ_SECONDS (600)"
	@echo "make bench     benchmarks (docs/performance.md)"
	@echo "make docs      regenerate the generated blocks of README.md and docs/ (DOCS_ALL=1: the slow ones too)"
	@echo "make install   PREFIX=/usr/local: binary, models, data, Slurm plugin (docs/slurm.md)"
	@echo "make slurm-test-24.11  the live Slurm test on Slurm 24.11 in a Debian 13 chroot (not in make test)"
	@echo "make deb       Debian package of the same under /usr (BUILD/gpucast_VERSION_ARCH.deb)"
	@echo "make image     container image gpucast:VERSION of that package on Debian 12 (docker or podman; docs/kubernetes.md)"

# Installs only what is missing; apt-get update runs only when something is.
deps:
	@missing=$$(for p in $(DEB_ALL); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: all Debian packages present"; fi

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DGPUCAST_WERROR=ON $(CMAKE_ARGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# make test's fixtures, made fresh by each run: one predictor trained on the shared data for every
# suite that only needs a predictor (GPUCAST_TEST_PREDICTOR; suites that test `train` itself still
# run it; its stored leave-one-workload-out predictions feed the simulations of report_chromium.sh,
# simulate --predictor) and one cache of the simulator's computed leave-one-workload-out predictions
# (GPUCAST_CACHE_DIR, keyed by the binary: computed once per run, never taken from ~/.cache).
TEST_FIXTURES = $(abspath $(BUILD))/test-fixtures
test: export GPUCAST_TEST_PREDICTOR = $(TEST_FIXTURES)/predictor.json
test: export GPUCAST_CACHE_DIR = $(TEST_FIXTURES)/cache
test: build
	rm -rf $(TEST_FIXTURES) && mkdir -p $(TEST_FIXTURES)
	$(BUILD)/gpucast train --out $(GPUCAST_TEST_PREDICTOR) --quiet >/dev/null
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	GPUCAST_BIN=$(BUILD)/gpucast $(PY) -m unittest discover -s tools/measure -p 'test_*.py'
	bash integrations/slurm/plugin_test.sh $(BUILD)/gpucast
	bash integrations/slurm/test.sh $(BUILD)/gpucast
	bash tests/serve_durability.sh $(BUILD)/gpucast
	bash tests/cli_test.sh $(BUILD)/gpucast
	bash tests/closed_loop.sh $(BUILD)/gpucast
	bash tests/hostile_client.sh $(BUILD)/gpucast
	bash tests/serve_round4.sh $(BUILD)/gpucast
	bash integrations/slurm/epilog_test.sh $(BUILD)/gpucast
	bash integrations/slurm/deputy_hang_test.sh $(BUILD)/gpucast
	@# Its output is docs/kubernetes.md's generated block (check: log k8s_test.out; tools/docs.py).
	bash tests/k8s_test.sh $(BUILD)/gpucast > $(TEST_FIXTURES)/k8s_test.out; rc=$$?; \
	  cat $(TEST_FIXTURES)/k8s_test.out; [ $$rc = 0 ] || rm -f $(TEST_FIXTURES)/k8s_test.out; exit $$rc
	bash tests/json_layouts.sh $(BUILD)/gpucast
	bash tests/memory_test.sh $(BUILD)/gpucast
	bash tests/report_chromium.sh $(BUILD)/gpucast
	GPUCAST_BIN=$(BUILD)/gpucast $(PY) -m unittest discover -s clients/python -p 'test_*.py'
	bash tests/docs_models.sh $(BUILD)/gpucast
	@# Generated blocks not stale, checked examples run and print what the docs show (tools/docs.py).
	$(PY) -m unittest discover -s tools -p 'test_docs.py'
	$(PY) -m unittest discover -s tools -p 'test_workloads.py'
	GPUCAST=$(BUILD)/gpucast $(PY) -m unittest discover -s tools -p 'test_export_hints.py'
	GPUCAST=$(BUILD)/gpucast $(PY) -m unittest discover -s tools -p 'test_opset_pairs.py'
	$(PY) tools/docs.py check --build $(BUILD)
	$(MAKE) deb
	bash tests/deb_test.sh $(BUILD)
	@# The main job (make demo) end to end, so that a new model or flag cannot break it unseen:
	@# every step and command on a small input (--quick); make demo runs the full one.
	bash tools/demo.sh --quick $(BUILD)/gpucast $(BUILD)/demo-test > $(BUILD)/demo-test.log 2>&1 || \
	  { tail -n 30 $(BUILD)/demo-test.log; echo "make test: tools/demo.sh FAILED (log: $(BUILD)/demo-test.log)"; exit 1; }
	@echo "make test: tools/demo.sh passed"

# The live Slurm test against Slurm 24.11 (Debian 13's), inside a Debian 13 chroot that
# integrations/slurm/chroot_test.sh builds once with debootstrap (about 150 MB from the Debian
# mirror; GPUCAST_CHROOT, default /var/cache/gpucast/trixie-slurm) and reuses. NOT part of
# `make test` (a download, minutes, root): run it by hand or in a CI job of its own (docs/slurm.md).
slurm-test-24.11: build
	flock /tmp/gpucast-suite.lock bash integrations/slurm/chroot_test.sh $(BUILD)/gpucast

# PREFIX/bin/gpucast, PREFIX/share/gpucast/{models,data,slurm}; DESTDIR=... for staging.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX) --strip

# The package is built from the build tree's install rules (CMakeLists.txt, CPack).
deb: build
	cd $(BUILD) && cpack -G DEB

# The container image (integrations/kubernetes/Dockerfile) of the package, on a Debian 12 base
# made with debootstrap from Debian's mirrors (tools/image.sh); needs root and docker or podman.
image: deb
	bash tools/image.sh $(BUILD)

demo: build
	bash tools/demo.sh $(BUILD)/gpucast

# Every suite `make test` runs, each once, against the ASan/UBSan build.
SAN_ASAN := detect_leaks=1:abort_on_error=0
SAN_UBSAN := print_stacktrace=1:halt_on_error=1
sanitize: deps
	cmake -S . -B build-asan -G Ninja -DGPUCAST_WERROR=ON -DGPUCAST_SANITIZE=ON -DGPUCAST_BENCH=OFF \
	  -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=$(SAN_ASAN) UBSAN_OPTIONS=$(SAN_UBSAN) ctest --output-on-failure -j $(JOBS)
	@# slurmctld/munged are machine-global: the same lock as make test's callers take.
	ASAN_OPTIONS=$(SAN_ASAN) UBSAN_OPTIONS=$(SAN_UBSAN) flock /tmp/gpucast-suite.lock bash integrations/slurm/test.sh build-asan/gpucast
	ASAN_OPTIONS=$(SAN_ASAN) UBSAN_OPTIONS=$(SAN_UBSAN) bash tests/serve_durability.sh build-asan/gpucast
	ASAN_OPTIONS=$(SAN_ASAN) UBSAN_OPTIONS=$(SAN_UBSAN) bash tests/cli_test.sh build-asan/gpucast
	ASAN_OPTIONS=$(SAN_ASAN) UBSAN_OPTIONS=$(SAN_UBSAN) bash tests/k8s_test.sh build-asan/gpucast
	ASAN_OPTIONS=$(SAN_ASAN) UBSAN_OPTIONS=$(SAN_UBSAN) bash tests/serve_round4.sh build-asan/gpucast
	ASAN_OPTIONS=$(SAN_ASAN) UBSAN_OPTIONS=$(SAN_UBSAN) GPUCAST_BIN=build-asan/gpucast $(PY) -m unittest discover -s tools/measure -p 'test_*.py'  # measured_check runs the ASan binary

# FUZZ_SECONDS: the ONNX loader; HTTP_FUZZ_SECONDS: the HTTP service with fuzz/http_corpus
# (issue 20's "HTTP target with the new corpus, 10 minutes"). First the single-node sweep of every
# ONNX operator schema (fuzz/op_sweep.cc): SWEEP_CASES random cases per schema for each seed of
# SWEEP_SEEDS (make test runs 4 cases of seed 1).
FUZZ_SECONDS ?= 60
HTTP_FUZZ_SECONDS ?= 600
SWEEP_CASES ?= 1000
SWEEP_SEEDS ?= 1 2 3
fuzz: build
	for s in $(SWEEP_SEEDS); do $(BUILD)/gpucast_op_sweep --cases $(SWEEP_CASES) --seed $$s || exit 1; done
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DGPUCAST_FUZZ=ON -DGPUCAST_BENCH=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build-fuzz -j $(JOBS) --target fuzz_onnx_loader fuzz_http
	mkdir -p build-fuzz/corpus build-fuzz/http-corpus
	cp -n models/*.onnx models/torchvision/*.onnx models/functions/*.onnx models/ties/*.onnx build-fuzz/corpus/
	cp -n fuzz/http_corpus/* build-fuzz/http-corpus/
	build-fuzz/fuzz/fuzz_onnx_loader -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=2048 \
	  build-fuzz/corpus
	build-fuzz/fuzz/fuzz_http -max_total_time=$(HTTP_FUZZ_SECONDS) -max_len=16384 -rss_limit_mb=2048 -timeout=10 \
	  build-fuzz/http-corpus

bench: build
	bash bench/run.sh $(BUILD)

# Every generated block of README.md and docs/*.md (tools/docs.py: markers, checks). The fast ones
# always; DOCS_ALL=1 also the slow ones (timings, evaluations) whose inputs did not change.
DOCS_ALL ?=
docs: build
	$(PY) tools/docs.py generate --build $(BUILD) $(if $(DOCS_ALL),--all)

clean:
	rm -rf $(BUILD) build-asan build-fuzz
