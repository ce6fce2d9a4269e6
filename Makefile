# SPDX-License-Identifier: MIT
# Makefile - the two commands of the README, and a few more.
#
#   make demo    install missing packages, build, compile examples/gemm.pat
#   make test    install missing packages, build, run every test: the suite,
#                the suite again under ASan+UBSan, and a bounded fuzz run
#   make docs    regenerate README.md and docs/*.md from docs/src/
#   make install install patc, its standard library, man page and docs under
#                PREFIX (default /usr/local), staged under DESTDIR if given
#   make fetch-weights   a real pretrained model as data/use-lite.safetensors
#   make accuracy        the accuracy study (bench/results/accuracy.md)
#   make bench           the CPU kernels beside OpenBLAS, Eigen and librsb (bench/results/cpu.csv;
#                        installs Eigen and librsb, which only this target needs)
#   make bench-prune     the pruning benchmark (bench/results/prune.csv)
#   make cost-model      measure tuning logs here (~20 min, quiet machine) and retrain
#                        the search's cost model (stdlib/cost-x86-64.model)
#   make bench-gpu       the GPU kernels beside cuBLAS (tests/gpu/run.sh; needs a GPU)
#   make gpu-carry       pack patc and gpu_bench for a GPU machine without LLVM (.gpu/)
#
# The real build is CMake; this file only drives it.

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 30
CMAKE_FLAGS ?=
PREFIX     ?= /usr/local
DESTDIR    ?=

.PHONY: all deps build demo docs install test test-main test-asan test-fuzz clean \
	fetch-weights accuracy bench bench-deps bench-prune bench-gpu gpu-carry cost-model

all: build

deps:
	@scripts/deps.sh

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@echo '$$ patc examples/gemm.pat'
	@$(BUILD)/patc examples/gemm.pat
	@echo
	@echo '$$ patc examples/gemm.pat --emit=pir'
	@$(BUILD)/patc examples/gemm.pat --emit=pir

# GNUInstallDirs' layout under PREFIX: bin/patc, share/patc/stdlib,
# share/man/man1/patc.1, share/doc/patc; DESTDIR stages it (packaging).
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# README.md and docs/*.md from docs/src/, with every example run again.
docs: build
	python3 scripts/gen-docs.py $(BUILD)/patc

test: test-main test-asan test-fuzz

test-main: build
	cd $(BUILD) && ctest -j $(JOBS) --output-on-failure

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPATC_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 CK_TIMEOUT_MULTIPLIER=3 \
		ctest -j $(JOBS) --output-on-failure

test-fuzz: deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
		-DCMAKE_BUILD_TYPE=Debug -DPATC_FUZZ=ON -DPATC_FUZZ_SECONDS=$(FUZZ_SECONDS) $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	cd $(FUZZ_BUILD) && ctest -V --output-on-failure -L fuzz

fetch-weights:
	scripts/fetch-weights.sh

cost-model: build
	rm -rf $(BUILD)/costlogs
	bench/costmodel/collect.sh $(BUILD)/patc $(BUILD)/costlogs
	$(BUILD)/patc train-cost-model $(BUILD)/costlogs/runs/*/tune.jsonl -o stdlib/cost-x86-64.model

accuracy: build
	@mkdir -p bench/results
	@if [ -f data/use-lite.safetensors ]; then \
		$(BUILD)/accuracy stdlib data/use-lite.safetensors > bench/results/accuracy.md; \
	else \
		echo "accuracy: data/use-lite.safetensors is absent (make fetch-weights); synthetic weights only"; \
		$(BUILD)/accuracy stdlib > bench/results/accuracy.md; \
	fi
	@echo "wrote bench/results/accuracy.md"

# OpenBLAS picks its kernels from the CPU model, and on some virtual machines
# it does not recognise the model and falls back to old SSE kernels: give it
# the newest kernel set this CPU's flags allow, so the baseline is fair.
OPENBLAS_CORE := $(shell grep -qw avx512f /proc/cpuinfo && echo SkylakeX || \
	(grep -qw avx2 /proc/cpuinfo && echo Haswell) || echo)

# The CPU kernels beside OpenBLAS, Eigen and librsb (bench/results/cpu.csv);
# BENCH=quick keeps the smaller shapes; BENCH=64/576/3136,128/576/784 those.
bench-deps:
	@scripts/deps.sh --bench

# A build configured before Eigen and librsb were there has no cpu_bench:
# configure it again to find them.
bench: bench-deps build
	@if [ ! -x $(BUILD)/cpu_bench ]; then \
		cmake -S . -B $(BUILD) >/dev/null && \
		cmake --build $(BUILD) -j $(JOBS) --target cpu_bench || { \
			echo "make bench: no cpu_bench: it needs Eigen and librsb (Debian:" \
				"apt-get install libeigen3-dev librsb-dev, or scripts/deps.sh --bench)" >&2; \
			exit 2; }; \
	fi
	@mkdir -p bench/results
	OPENBLAS_CORETYPE=$(OPENBLAS_CORE) $(BUILD)/cpu_bench stdlib bench/results/cpu.csv $(BENCH)
	OPENBLAS_CORETYPE=$(OPENBLAS_CORE) $(BUILD)/layout_bench stdlib bench/results/layout.csv $(BENCH)
	OPENBLAS_CORETYPE=$(OPENBLAS_CORE) $(BUILD)/epilogue_bench stdlib bench/results/epilogue.csv $(BENCH)

bench-prune: build
	@mkdir -p bench/results
	OPENBLAS_CORETYPE=$(OPENBLAS_CORE) $(BUILD)/prune_bench stdlib bench/results/prune.csv

# The GPU checks and benchmark (bench/results/gpu.csv): tests/gpu/run.sh.
bench-gpu: build
	tests/gpu/run.sh $(BUILD) bench/results

# patc and gpu_bench for a GPU machine that lacks LLVM 19 and these
# libraries: stripped, with the shared libraries they load, xz-compressed
# (tests/gpu/unpack.sh unpacks and runs them there: tests/README.md).
GPU_LIBS = libcjson.so.1 libopenblas.so.0 libgfortran.so.5 libquadmath.so.0
gpu-carry: build
	rm -rf .gpu && mkdir -p .gpu/lib
	strip -o .gpu/patc $(BUILD)/patc
	strip -o .gpu/gpu_bench $(BUILD)/gpu_bench
	for l in $(GPU_LIBS); do cp -L /lib/x86_64-linux-gnu/$$l .gpu/lib/; done
	if [ -f ../shared/bench/gpu_peers.py ]; then cp ../shared/bench/gpu_peers.py .gpu/; \
	else echo "no ../shared/bench/gpu_peers.py: tests/gpu/run.sh will not measure the peers"; fi
	xz -T0 -6 .gpu/patc .gpu/gpu_bench .gpu/lib/*
	du -sh .gpu

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) .gpu
