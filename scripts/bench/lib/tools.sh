# shellcheck shell=bash
# Sourced by the benchmark scripts: builds a peer tool written in Go at a
# pinned version, once, in a module of its own under
# ${XDG_CACHE_HOME:-~/.cache}/svclab/tools/<name>-<version>/, so that its
# dependencies never touch svclab's go.mod and a rerun costs nothing.
#
#   path=$(pinned_tool vegeta github.com/tsenart/vegeta/v12 v12.13.0 github.com/tsenart/vegeta/v12)
#
# prints the binary's path, or nothing (and a reason on stderr) when the
# module proxy cannot serve that version or the build fails. A large tool
# (k6) takes many minutes to build on a busy 2-core machine; the Go build
# cache keeps what a timed-out build compiled.
SVCLAB_TOOLS_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/svclab/tools

pinned_tool() { # name module version package
	local name=$1 mod=$2 ver=$3 pkg=$4
	local dir=$SVCLAB_TOOLS_CACHE/$name-$ver
	if [ -x "$dir/$name" ]; then
		echo "$dir/$name"
		return
	fi
	mkdir -p "$dir"
	(
		cd "$dir" &&
			{ [ -f go.mod ] || go mod init "svclab.tools/$name" >/dev/null 2>&1; } &&
			GOFLAGS=-mod=mod timeout 900 go get "$mod@$ver" >build.log 2>&1 &&
			{ GOFLAGS=-mod=mod timeout 3600 go build -o "$name.tmp" "$pkg" >>build.log 2>&1 ||
				{ echo "go build failed or timed out (status $?)" >>build.log; false; }; } &&
			mv "$name.tmp" "$name"
	) || {
		echo "$name $ver: build failed: $(tail -1 "$dir/build.log" 2>/dev/null)" >&2
		return 0
	}
	echo "$dir/$name"
}
