# JourneySharing: the two commands a new machine needs are `make demo` and `make test`.
# Everything they need is installed by the targets below when it is missing.

SWIFT        ?= swift
PYTHON       ?= python3
VENV         := .venv
VENV_PY      := $(VENV)/bin/python
BUILD_DIR    := .build/debug
FUZZ_SECONDS ?= 60
CI_FUZZ_SECONDS ?= 10

.PHONY: all demo demo-ci demo-relay relay-chaos test format-check test-tsan test-asan chaos build deps venv swift-test python-test fuzz fuzz-ci format clean \
	swift-test-ci tsan-tests waiting-tests tsan-build asan-build fuzz-build hostile-test soak \
	bench bench-full bench-deps bench-build bench-go bench-micro bench-report bench-relay bench-check bench-thresholds

all: build

## deps: apt-get install libnghttp2-dev libssl-dev pkg-config, only when missing
deps:
	@scripts/install-system-deps.sh

## venv: the Python test peers, pinned in Tests/requirements.txt
venv: $(VENV)/.installed

$(VENV)/.installed: Tests/requirements.txt
	@test -x $(VENV_PY) || $(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install --quiet --disable-pip-version-check -r Tests/requirements.txt
	@touch $@

build: deps
	$(SWIFT) build

## demo: follow trips on the embedded simulator (DEMO_ARGS, e.g. --trips 20 --speedup 120)
DEMO_ARGS ?=
demo: build
	$(BUILD_DIR)/tripwatch demo $(DEMO_ARGS)

## test: install what is missing, build, and run every test. Every test runs once: the suites that run under
## ThreadSanitizer or AddressSanitizer (TSAN_FILTER, ASAN_FILTER) run only there, and the debug build leaves out
## the test targets only a sanitizer pass runs (SANITIZER_ONLY_TEST_TARGETS). Work that keeps both cores busy
## runs beside work that mostly waits on servers and timers; each phase prints when it starts
## (`make test: … at HH:MM:SS`):
## 1. format-check, the venv, the build, the ASan build and the fuzzers;
## 2. the Swift tests but the sanitizers' (swift-test-ci);
## 3. side by side: the Python tests; the TSan build, then the TSan tests; the demo, the ASan tests, the
##    fuzzers' run, chaos and the hostile-peer attacks (hostile-test);
## 4. relay-chaos alone (its three relays and three nats-servers fell behind beside the TSan tests once).
SANITIZER_ONLY_TEST_TARGETS := UpdatePipelineTests,HTTP2TransportTests,ProtoWireTests,FleetEngineMessagesTests,GRPCProtocolTests,HTTP2SessionTests
CI_ENV := JOURNEYSHARING_SKIP_TEST_TARGETS=$(SANITIZER_ONLY_TEST_TARGETS)
test: deps
	@echo "make test: format-check, venv, build, asan-build, fuzz-build at $$(date +%T)"
	$(CI_ENV) $(MAKE) -j5 --output-sync=target format-check venv build asan-build fuzz-build
	@echo "make test: swift-test-ci at $$(date +%T)"
	$(CI_ENV) $(MAKE) swift-test-ci
	@echo "make test: python-test, tsan-tests, waiting-tests (demo, ASan, fuzz, chaos, hostile) at $$(date +%T)"
	$(CI_ENV) $(MAKE) -j3 --output-sync=target python-test tsan-tests waiting-tests
	@echo "make test: relay-chaos at $$(date +%T)"
	$(CI_ENV) $(MAKE) relay-chaos
	@echo "make test: passed at $$(date +%T)"

# Phase 3's chains: the TSan build and tests; the tests that mostly wait (the demo's simulated trips, a killed
# server's downtime, a relay's ack wait) with the short ASan and fuzzing runs first.
tsan-tests:
	$(MAKE) tsan-build
	$(MAKE) test-tsan
waiting-tests:
	$(MAKE) demo-ci test-asan fuzz-ci chaos hostile-test

## tsan-build, asan-build, fuzz-build: the sanitizer builds `make test` runs (test-tsan and test-asan build too)
tsan-build:
	$(TSAN_ENV) $(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
asan-build:
	$(ASAN_ENV) $(SWIFT) build --build-tests --sanitize=address --scratch-path .build-asan
fuzz-build:
	scripts/build-fuzzer.sh

## format: rewrite the Swift sources in place with swift-format (the toolchain's `swift format`, rules in
## .swift-format); format-check: fail when a file is not formatted that way, or when a target's declared
## dependencies differ from its imports or a C library has two importers (scripts/check-imports.py); part
## of `make test`, so of CI
FORMAT_PATHS := Package.swift Sources Tests Benchmarks/Package.swift Benchmarks/Sources Benchmarks/Benchmarks
format:
	$(SWIFT) format format --in-place --parallel --recursive $(FORMAT_PATHS)
format-check:
	$(SWIFT) format lint --strict --parallel --recursive $(FORMAT_PATHS)
	python3 scripts/check-imports.py

## demo-ci: the demo, short and non-interactive; exits 0 only when every trip finished
demo-ci:
	$(BUILD_DIR)/tripwatch demo --trips 8 --speedup 120 --update-interval 0.25 --duration 60 --plain

# Three passes. `swift test --filter/--skip` match type names (Module.Type/test), not display names, so the
# passes go by type names: a consumer test kept over real sockets in wall-clock time has a type name ending in
# EndToEndTests; every other JourneySharingTests suite runs in memory on a virtual clock (or needs no server)
# and belongs to the main pass.
# - main: everything but the wall-time, alone and chaos suites (`make chaos` runs ChaosTests);
# - timed: the suites that follow simulated trips in wall-clock time over sockets (at 200-1000x), in a pass of
#   their own so the rest of the suite does not starve them on a 2-core machine;
# - alone, one test at a time (--no-parallel): 10,000 polled trips on the virtual clock (seconds of CPU), and the
#   decode budget's peak-memory measurement (the process's VmHWM, which any test running beside it adds to).
MAIN_PASS_SKIP   ?=
WALL_TIME_SUITES := EndToEndTests|FleetSimTests
ALONE_SUITES     := PollBudgetTests|DecodeBudgetPeakMemoryTests
swift-test:
	$(SWIFT) test --skip '$(WALL_TIME_SUITES)|$(ALONE_SUITES)|ChaosTests$(MAIN_PASS_SKIP)'
	$(SWIFT) test --skip-build --filter '$(WALL_TIME_SUITES)'
	$(SWIFT) test --skip-build --no-parallel --filter '$(ALONE_SUITES)'

## swift-test-ci: swift-test without the suites test-tsan and test-asan run (make test runs those)
swift-test-ci:
	$(MAKE) swift-test MAIN_PASS_SKIP='|$(TSAN_FILTER)|$(ASAN_FILTER)'

## chaos: 2,000 trips followed while a fleetsim process is killed and restarted and sends GOAWAY, resets,
## drops and UNAVAILABLE; blocked subscribers; client-error classes that heal. Prints `chaos:` figures.
chaos:
	FLEETSIM=$(BUILD_DIR)/fleetsim $(SWIFT) test --filter ChaosTests --skip RelayChaosTests

## relay-chaos: 2,000 trips through three relay processes on a 3-node nats-server cluster while a relay is
## SIGKILLed, a NATS node restarts and fleetsim sends GOAWAY. Prints `relay-chaos:` figures.
relay-chaos:
	TRIPWATCH=$(BUILD_DIR)/tripwatch FLEETSIM=$(BUILD_DIR)/fleetsim $(SWIFT) test --filter RelayChaosTests

## demo-relay: two relays on the embedded simulator with a nats-server of its own; exits 0 once every trip's
## final state arrived over gRPC and over JetStream
demo-relay: build
	scripts/demo-relay.sh $(BUILD_DIR)/tripwatch

PYTEST_ENV = PROTOWIRE_CONFORMANCE=$(BUILD_DIR)/protowire-conformance \
	GRPC_INTEROP_CLIENT=$(BUILD_DIR)/grpc-interop-client \
	TRIPWATCH=$(BUILD_DIR)/tripwatch \
	FLEETSIM=$(BUILD_DIR)/fleetsim
HOSTILE_TESTS := Tests/ToolsPytest/test_server_hostile.py

python-test:
	$(PYTEST_ENV) $(VENV_PY) -m pytest -q -s -m "not soak" Tests/Differential Tests/Interop Tests/Conformance \
	    Tests/ToolsPytest Tests/FleetEngineFake Tests/Readme --ignore=$(HOSTILE_TESTS)

## hostile-test: the attacks on fleetsim and tripwatch (a hostile client beside a well-behaved one, a hostile
## server), each printing a `hostile …:` line with the server's memory and CPU and the legitimate calls' latency;
## part of `make test`, in the chain that mostly waits
hostile-test:
	$(PYTEST_ENV) $(VENV_PY) -m pytest -q -s -m "not soak" $(HOSTILE_TESTS)

## soak: the attacks that need minutes (`@pytest.mark.soak`), not part of `make test`
soak: build venv
	$(PYTEST_ENV) $(VENV_PY) -m pytest -q -s -m soak Tests/ToolsPytest

## test-tsan: under ThreadSanitizer, the delivery pipeline, the channel, and the consumer API's tests (following,
## errors, lifecycle, refresh, limits), which run in memory on a virtual clock: every JourneySharingTests suite but
## the end-to-end ones over sockets in wall-clock time, the alone ones and ChaosTests (TSAN_SKIP). Each entry of
## TSAN_FILTER runs in a process of its own: side by side under TSan's slowdown on two cores, the consumer tests
## and the channel tests push each other's tests past their time limits.
TSAN_FILTER ?= UpdatePipelineTests|HTTP2TransportTests|JourneySharingTests
TSAN_SKIP   ?= $(WALL_TIME_SUITES)|$(ALONE_SUITES)|ChaosTests
# The sanitizer builds compile only the test targets they run and what those reach (Package.swift reads
# JOURNEYSHARING_TEST_TARGETS): TSan and ASan builds of the whole package were a third of CI's time.
comma := ,
TSAN_ENV = JOURNEYSHARING_TEST_TARGETS=$(subst |,$(comma),$(TSAN_FILTER))
ASAN_ENV = JOURNEYSHARING_TEST_TARGETS=$(subst |,$(comma),$(ASAN_FILTER))
test-tsan:
	$(TSAN_ENV) $(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	@set -e; for tests in $(subst |, ,$(TSAN_FILTER)); do \
	  echo "test-tsan: $$tests"; \
	  $(TSAN_ENV) TSAN_OPTIONS=suppressions=$(CURDIR)/Tests/tsan-suppressions.txt \
	    $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan --filter "$$tests" \
	    --skip '$(TSAN_SKIP)'; \
	done

## test-asan: the codec and framing tests (protobuf wire format, Fleet Engine messages, gRPC framing
## and calls, the nghttp2 session) under AddressSanitizer, leak checking included: the code that
## parses bytes from the network through unsafe pointers, and the one that owns nghttp2's C objects.
## LeakSanitizer stops the process with ptrace at exit; where a sandbox forbids ptrace it fails the
## run instead, so run there with TEST_ASAN_OPTIONS=detect_leaks=0. Tests/lsan-suppressions.txt
## holds the one leak that is XCTest's own.
ASAN_FILTER ?= ProtoWireTests|FleetEngineMessagesTests|GRPCProtocolTests|HTTP2SessionTests
TEST_ASAN_OPTIONS ?= detect_leaks=1
test-asan:
	$(ASAN_ENV) $(SWIFT) build --build-tests --sanitize=address --scratch-path .build-asan
	$(ASAN_ENV) ASAN_OPTIONS=$(TEST_ASAN_OPTIONS) LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan-suppressions.txt \
	  $(SWIFT) test --skip-build --sanitize=address --scratch-path .build-asan --filter '$(ASAN_FILTER)'

## fuzz: run each libFuzzer target (protowire, grpc-framing, trip-merge) for FUZZ_SECONDS
fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS)

## fuzz-ci: the same for CI_FUZZ_SECONDS each (three targets: about a minute in all)
fuzz-ci:
	scripts/fuzz.sh $(CI_FUZZ_SECONDS)

## bench: the quick benchmarks (minutes): codec and pipeline micro benchmarks, tripload end to end
## against grpc-swift-2 and grpc-go, h2load's HTTP/2 ceiling; writes Benchmarks/results/latest.md and latest.svg
BENCH_RESULTS := Benchmarks/results
TRIPLOAD      := Benchmarks/.build/release/tripload
TRIPLOAD_ARGS ?=
TRIPLOAD_RELAY_ARGS ?= --trips 10000 --watched-trips 2500 --clients 4
bench: deps bench-deps bench-build bench-go bench-micro
	$(TRIPLOAD) run --out $(BENCH_RESULTS)/e2e.json $(TRIPLOAD_ARGS)
	$(MAKE) bench-report

## bench-full: the long version (more trip counts, longer windows, longer micro benchmark runs)
bench-full: deps bench-deps bench-build bench-go
	JOURNEYSHARING_BENCH_SECONDS=10 $(MAKE) bench-micro
	$(TRIPLOAD) run --full --out $(BENCH_RESULTS)/e2e.json $(TRIPLOAD_ARGS)
	$(MAKE) bench-report

## bench-deps: h2load and nghttpd (Debian nghttp2-client, nghttp2-server), only when missing
bench-deps:
	@scripts/install-bench-deps.sh

## bench-relay: 10,000 trips followed once by one relay (tripwatch relay run, on a nats-server of its own); then 4
## downstream clients each following 2,500 of them through it; three runs, medians in Benchmarks/results/relay.json
bench-relay: deps bench-deps
	cd Benchmarks && $(SWIFT) build -c release --product tripload && $(SWIFT) build -c release --product tripwatch
	$(TRIPLOAD) relay --out $(BENCH_RESULTS)/relay.json $(TRIPLOAD_RELAY_ARGS)

bench-build:
	cd Benchmarks && $(SWIFT) build -c release --product tripload

## bench-go: tripload's grpc-go client (Benchmarks/.build/go/bin/tripload-go) from Debian's Go, grpc-go and
## protobuf packages (installed when missing), with protoc generating its messages from Protos/
bench-go:
	Benchmarks/scripts/build-go-client.sh

BENCH_MICRO_ARGS ?=
bench-micro:
	mkdir -p $(BENCH_RESULTS)
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark \
	  --target CodecBenchmarks --target PipelineBenchmarks $(BENCH_MICRO_ARGS) \
	  --format jmh --path results/ --no-progress

bench-report:
	$(PYTHON) Benchmarks/scripts/report.py $(BENCH_RESULTS)

## bench-check: the micro benchmarks of our code (ProtoWire codec, pipeline) against the committed p90 thresholds
## in Benchmarks/Thresholds, with the tolerances the benchmarks' code sets (allocations exact or nearly, time
## within 60 %): fails on a regression; on an improvement it passes and says to record the new thresholds
BENCH_GATED := --target CodecBenchmarks --target PipelineBenchmarks --filter '.*(ProtoWire|Pipeline).*'
bench-check: deps
	cd Benchmarks && status=0; $(SWIFT) package benchmark thresholds check --path $(CURDIR)/Benchmarks/Thresholds $(BENCH_GATED) \
	  --no-progress || status=$$?; \
	if [ $$status -eq 4 ]; then echo "bench-check: better than the thresholds; record them with make bench-thresholds"; \
	  status=0; fi; exit $$status

## bench-thresholds: records this machine's p90 of the gated micro benchmarks as Benchmarks/Thresholds (commit it).
## package-benchmark 1.38 writes each file under the benchmark's name with spaces made underscores but reads it
## back under the name itself, so the files are renamed to the names (which have no underscore of their own); CPU
## time is dropped (counted in 10 ms ticks, it cannot gate a 2 ms iteration)
bench-thresholds: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark thresholds update \
	  --path $(CURDIR)/Benchmarks/Thresholds $(BENCH_GATED) --no-progress
	cd Benchmarks/Thresholds && for file in *_*.p90.json; do mv -f "$$file" "$$(echo "$$file" | tr _ ' ')"; done
	$(PYTHON) -c 'import glob, json; [json.dump({k: v for k, v in json.load(open(f)).items() if k != "cpuTotal"}, \
	  open(f, "w"), indent=2, sort_keys=True) for f in glob.glob("Benchmarks/Thresholds/*.json")]'

clean:
	rm -rf .build .build-* .fuzz Tests/Differential/generated Benchmarks/.build
