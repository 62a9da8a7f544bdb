# fatia: the two commands a newcomer needs are `make run` and `make test`. Everything else here
# is a thin wrapper over CMake presets (CMakePresets.json) and scripts in scripts/ and bench/.

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_FLAGS ?=

.PHONY: all build setup run test test-slow test-asan test-all fuzz fuzz-run format format-check \
        check-style clean help

all: build

help:
	@echo "make run          set up, build, run fatia on its embedded default"
	@echo "make test         set up, build, run the fast test tier (CTest)"
	@echo "make test-slow    the long tier: invariant runs, soaks, long fuzzing"
	@echo "make test-asan    ASan+UBSan build of the unit tests and fuzz-corpus replay"
	@echo "make bench-AREA   a benchmark from bench/ (supply, control, api, gateway, fgd, density)"
	@echo "make fuzz         libFuzzer targets (clang) in build-fuzz/bin"
	@echo "make format       clang-format the tree; make format-check to verify"

setup:
	@scripts/setup

build/build.ninja:
	@scripts/setup
	cmake --preset default >/dev/null

build: build/build.ninja
	@cmake --build build -j $(JOBS)

run: build
	@scripts/run

test: build
	@cd build && ctest -j $(JOBS) --output-on-failure -LE slow $(CTEST_FLAGS)

test-slow: build
	@cd build && ctest -j $(JOBS) --output-on-failure -L slow $(CTEST_FLAGS)

test-all: build
	@cd build && ctest -j $(JOBS) --output-on-failure $(CTEST_FLAGS)

build-asan/build.ninja:
	@scripts/setup
	cmake --preset asan >/dev/null

test-asan: build-asan/build.ninja
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest -j $(JOBS) --output-on-failure -L 'unit|golden|fuzz-replay' -LE slow $(CTEST_FLAGS)

build-fuzz/build.ninja:
	@scripts/setup
	cmake --preset fuzz >/dev/null

fuzz: build-fuzz/build.ninja
	@cmake --build build-fuzz -j $(JOBS)

# make fuzz-run TARGET=doc SECONDS=600
fuzz-run: fuzz
	@scripts/fuzz-run $(TARGET) $(SECONDS)

bench-%: build
	@test -x bench/$*.sh || { echo "no benchmark bench/$*.sh" >&2; exit 2; }
	@bench/$*.sh build

FORMAT_FILES = $(shell git ls-files '*.c' '*.h')

format:
	@clang-format -i $(FORMAT_FILES)

format-check:
	@clang-format --dry-run --Werror $(FORMAT_FILES)

# check-style reads the built libraries too (scripts/check-symbols), so it builds first.
check-style: build
	@scripts/check-style

clean:
	rm -rf build build-dev build-asan build-fuzz build-release
