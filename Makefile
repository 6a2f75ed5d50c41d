# Front door for a fresh machine: `make run` and `make test` install missing
# Debian packages (scripts/deps.sh), configure with CMake and build.
BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS       ?= $(shell nproc)
# Tests at once: one more than the cores. An end-to-end test mostly waits on
# the simulated server's clock (about a quarter of a core each), and the
# client self-check tells a busy host from a busy client; the `timing_*`
# tests and the few in CMakeLists.txt's IM_E2E_ALONE still run alone.
TEST_JOBS  ?= $(shell echo $$(( $$(nproc) + 1 )))
FUZZ_SECONDS ?= 8
PREFIX     ?= /usr/local

.PHONY: all deps deps-build build test test-fast test-asan test-asan-full test-tsan run report-png demo bench bench-build clean format \
        fuzz valgrind soak install uninstall deb

all: build

deps-build:
	@bash scripts/deps.sh build

deps:
	@bash scripts/deps.sh test

build: deps-build
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# Normal build (the system compiler, gcc on Debian) and its tests, then a
# clang build with AddressSanitizer + UndefinedBehaviorSanitizer and the
# libFuzzer targets, running every test again (but the `timing` ones, which
# measure this machine's speed) plus each fuzzer briefly.
test: deps test-fast test-asan

test-fast: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)
	@cd $(BUILD) && ctest --output-on-failure -j$(TEST_JOBS)

test-asan: deps
	@CC=clang cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	  -DIM_SANITIZE=address,undefined -DIM_FUZZ=ON -DIM_FUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j$(TEST_JOBS) -LE 'timing|heavy'

# Every end-to-end test under ASan+UBSan, the `heavy` ones included (about
# 15 more minutes on 2 cores).
test-asan-full: deps
	@CC=clang cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	  -DIM_SANITIZE=address,undefined -DIM_FUZZ=ON -DIM_FUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j$(TEST_JOBS) -LE timing

# ThreadSanitizer (clang) on the threaded cases: loader threads sharing a
# start barrier, builder threads preparing and counting beside the loops,
# the record writer, the progress thread, the signal flag (test_loader;
# tests/e2e/test_threads.sh; test_chaos.sh's threaded case). Suppressions,
# each with its reason: tests/tsan.supp.
test-tsan: deps
	@CC=clang cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DIM_SANITIZE=thread >/dev/null
	@cmake --build $(TSAN_BUILD) -j$(JOBS) --target infermeter_bin test_loader test_live
	@TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$(CURDIR)/tests/tsan.supp" \
	  $(TSAN_BUILD)/test_loader
	@TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$(CURDIR)/tests/tsan.supp" \
	  $(TSAN_BUILD)/test_live
	@TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$(CURDIR)/tests/tsan.supp" \
	  bash tests/e2e/test_prometheus.sh $(TSAN_BUILD)/infermeter
	@TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$(CURDIR)/tests/tsan.supp" \
	  bash tests/e2e/test_threads.sh $(TSAN_BUILD)/infermeter
	@TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$(CURDIR)/tests/tsan.supp" \
	  bash tests/e2e/test_chaos.sh $(TSAN_BUILD)/infermeter
	@TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$(CURDIR)/tests/tsan.supp" \
	  bash tests/e2e/test_report.sh $(TSAN_BUILD)/infermeter

# The main job: the protocol of a publishable load test against the built-in
# simulated server (DeepSeek-V3 on 8xH200, real time): three independent runs
# of Poisson 2 req/s for 20 s (5 s warm-up), prompts of varied length, the
# statistics over them and the validity audit (scenarios/publishable.json).
run: build
	@echo "make run: infermeter run --scenario scenarios/publishable.json, against the built-in server"
	@echo "  (in-process, real time: time scale 1): 5 runs, closed loop of 16, 22 s after 3 s warm-up,"
	@echo "  prompts 384-640 tokens, 64 out; about 2 minutes. Scenario: scenarios/publishable.json"
	@$(BUILD)/infermeter run --scenario scenarios/publishable.json

# docs/report.png (README.md's picture of report.html): a 25 s run rendered
# by headless chromium.
report-png: build
	@bash scripts/report-png.sh $(BUILD)/infermeter docs/report.png

# Stream one request through the built-in server and show what it says.
demo: build
	@bash scripts/demo.sh $(BUILD)/infermeter

bench: build
	@bash bench/serve_capacity.sh $(BUILD)/infermeter

# The C benchmarks (bench/README.md) into $(BUILD)/bench/.
bench-build: build
	@cmake --build $(BUILD) --target benches -j$(JOBS)

# Long fuzzing: every libFuzzer target FUZZ_MINUTES (default 20) under ASan +
# UBSan, new coverage merged back into tests/fuzz/corpus (commit it).
FUZZ_BUILD   ?= build-fuzz
FUZZ_MINUTES ?= 20
fuzz: deps
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	  -DIM_SANITIZE=address,undefined -DIM_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS)
	@bash scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_MINUTES) $(FUZZ_TARGETS)

# valgrind memcheck over a short run and its report (memory errors only).
valgrind: build
	@bash scripts/deps.sh valgrind
	@bash scripts/valgrind.sh $(BUILD)/infermeter

# 10,000 streams for 10 minutes: RSS, fds and ITL p99 slopes (bench/soak.sh).
soak: build
	@bash bench/soak.sh $(BUILD)/infermeter $(SOAK_SECONDS) $(SOAK_STREAMS)

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)

# The binary, man page, bash and zsh completions, docs, scenarios and deploy/
# under $(PREFIX) (default /usr/local; DESTDIR=... stages it elsewhere).
# `make uninstall` removes what the last install wrote (the build
# directory's install_manifest.txt) and the folders left empty.
install: build
	@DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

uninstall:
	@DESTDIR="$(DESTDIR)" bash scripts/uninstall.sh $(BUILD)

# A Debian package (build/infermeter_VERSION_ARCH.deb) from the same install
# tree, prefix /usr, packed with dpkg-deb (scripts/make-deb.sh).
deb: build
	@bash scripts/make-deb.sh $(BUILD)
