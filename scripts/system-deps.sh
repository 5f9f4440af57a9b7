#!/usr/bin/env bash
# system-deps.sh [--check] GROUP...
#
# The Debian packages a make target needs beyond Go and Python 3.11, by
# GROUP: venv (make venv, hence make quickstart), test (make test: venv's
# and every package a test would otherwise skip without) and bench (make
# bench's peer tools). Each package is checked by looking for what svclab
# runs from it, where svclab looks.
#
# As root it installs the missing ones with apt-get, quietly; when nothing
# is missing it does nothing, not even an apt-get update. Otherwise, or
# with --check, it prints one warning naming each missing package and what
# goes without it, and exits 0: the tests that need one skip and say why.
# It exits non-zero only when apt-get fails, or a package installed
# without what it was installed for.
set -euo pipefail

check_only=
if [ "${1:-}" = --check ]; then check_only=1; shift; fi
[ $# -gt 0 ] || { echo "usage: $0 [--check] venv|test|bench..." >&2; exit 2; }
python=${PYTHON:-python3}

# A program svclab runs, as an executable file (as Go's exec.LookPath
# wants it; bash's command -v also names a file that is not): on PATH or
# where Debian puts it (a user's PATH often lacks /usr/sbin, where nginx
# and haproxy are).
has() {
  local n p
  for n in "$@"; do
    while read -r p; do
      [ -f "$p" ] && [ -x "$p" ] && return 0
    done < <(type -aP "$n" || :; echo "/usr/sbin/$n"; echo "/usr/bin/$n")
  done
  return 1
}
# has_env VAR NAME...: VAR names the program (svclab reads SVCLAB_PROMETHEUS
# and SVCLAB_HAPROXY before looking), or has NAME...
has_env() {
  local v=${!1:-}
  shift
  if [ -n "$v" ]; then [ -f "$v" ] && [ -x "$v" ]; else has "$@"; fi
}
has_postgres() { has initdb || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; }
# Debian's Python leaves ensurepip, which `python3 -m venv` needs, to
# python3.X-venv; another Python (pyenv, a container's) has its own.
# ensurepip.version() finds the pip it would install.
venv_pkg() {
  "$python" -c 'import sys; sys.exit(sys.prefix != "/usr")' 2>/dev/null || return 0
  "$python" -c 'import ensurepip; ensurepip.version()' >/dev/null 2>&1 && return 0
  "$python" -c 'import sys; print("python%d.%d-venv" % sys.version_info[:2])'
}

missing=() why=()
# need PACKAGE WHAT CHECK...: PACKAGE is missing when CHECK fails; WHAT
# says what goes without it.
need() {
  local pkg=$1 what=$2
  shift 2
  "$@" && return 0
  [[ " ${missing[*]} " != *" $pkg "* ]] || return 0
  missing+=("$pkg")
  why+=("$(printf '  %-24s %s' "$pkg" "$what")")
}
survey() {
  local group pkg
  missing=() why=()
  for group in "$@"; do
    case $group in
    venv | test)
      pkg=$(venv_pkg)
      [ -z "$pkg" ] || need "$pkg" "make venv fails, and with it the report and every Python test" false
      ;;&
    test)
      need curl "skip: the mesh and resource-limit tests that probe with curl" has curl
      need openssl "skip: the certificate checks made with openssl (mTLS)" has openssl
      need prometheus "skip: the deploy.metrics tests (scraping, per-replica counts)" has_env SVCLAB_PROMETHEUS prometheus
      need postgresql "skip: the shop app's tests, PostgreSQL as a backing service" has_postgres
      need redis-server "skip: the boutique app's tests with its Redis cart store" has redis-server
      need nginx-light "skip: the nginx ingress's and the nginx sidecar's tests" has nginx
      need libnginx-mod-stream "skip: the nginx sidecar's tests (its TCP proxying)" \
        test -f /usr/lib/nginx/modules/ngx_stream_module.so
      need haproxy "skip: the HAProxy sidecar's tests" has_env SVCLAB_HAPROXY haproxy
      need chromium "skip: the report's and the live view's tests in a browser (analysis/tests/test_browser.py, cmd/svclab/ui_test.go)" has chromium chromium-browser
      need npm "make build fails: the live view's chart library (uPlot) comes from the npm registry" has npm
      need containerd "skip: the kube deployer's tests on a real node (make cluster)" has containerd ctr
      need runc "skip: the kube deployer's tests on a real node (containerd's runtime)" has runc
      need containernetworking-plugins "skip: the kube deployer's tests on a real node (its CNI bridge)" \
        test -x /usr/lib/cni/bridge -a -x /usr/lib/cni/host-local
      need iptables "skip: the kube deployer's tests on a real node (kube-proxy)" has iptables iptables-save
      need openjdk-17-jdk-headless "skip: the Java implementations' build (make java) and tests" has java
      need maven "skip: the Java implementations' build (Maven) and tests" has mvn
      ;;
    bench)
      need wrk "left out: wrk in make bench's comparisons" has wrk
      need tcpdump "skip: make bench's accuracy against the wire (scripts/bench/accuracy.sh)" has tcpdump
      ;;
    venv) ;;
    *)
      echo "$0: unknown group $group (venv, test or bench)" >&2
      exit 2
      ;;
    esac
  done
}

survey "$@"
[ ${#missing[@]} -gt 0 ] || exit 0

if [ "$(id -u)" != 0 ] || [ -n "$check_only" ]; then
  {
    if [ -n "$check_only" ]; then
      echo "warning: Debian packages missing: ${missing[*]}"
    else
      echo "warning: Debian packages missing, and only root installs them: ${missing[*]}"
    fi
    echo "  what goes without them:"
    printf '%s\n' "${why[@]}"
    echo "  to install them: sudo $0 $*"
  } >&2
  exit 0
fi

echo "system-deps: apt-get install ${missing[*]}" >&2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
# Another apt (a second clone's make test) may hold the lock: wait for it.
apt=(apt-get -qq -o DPkg::Lock::Timeout=600)
if ! { "${apt[@]}" update && "${apt[@]}" -y install "${missing[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "system-deps: apt-get failed to install ${missing[*]}" >&2
  exit 1
fi
wanted=("${missing[@]}")
survey "$@"
if [ ${#missing[@]} -gt 0 ]; then
  echo "system-deps: installed ${wanted[*]}, but still missing:" >&2
  printf '%s\n' "${why[@]}" >&2
  exit 1
fi
