#!/usr/bin/env bash
# cached-venv.sh VENV PROJECT EXTRAS [CONSTRAINTS]
#
# Makes VENV a virtualenv with the Python project in PROJECT installed
# editable, with EXTRAS. Its dependencies are installed once per machine,
# under $SVCLAB_CACHE/pydeps, keyed by the Python version and the files
# that name them (pyproject.toml and the constraints); VENV is a hard-linked
# copy of that environment with the project itself added. pip installing
# and byte-compiling the analysis dependencies cost about 70 s of CPU in
# every fresh clone before; the copy costs about one.
set -euo pipefail
venv=$1 project=$2 extras=$3 constraints=${4:-}
python=${PYTHON:-python3}
cache=${SVCLAB_CACHE:?set SVCLAB_CACHE to the svclab cache directory}
ver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
key=$(cat "$project/pyproject.toml" ${constraints:+"$constraints"} | sha256sum | cut -c1-16)
name=$("$python" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["name"])' "$project/pyproject.toml")
deps=$cache/pydeps/$name-py$ver-$key
mkdir -p "$cache/pydeps"
(
  # Two clones may build the same environment at once.
  flock 9
  if [ ! -e "$deps/.complete" ]; then
    rm -rf "$deps"
    "$python" -m venv "$deps"
    "$deps/bin/pip" install --quiet --upgrade pip
    "$deps/bin/pip" install --quiet ${constraints:+-c "$constraints"} -e "$project[$extras]"
    "$deps/bin/pip" uninstall --quiet -y "$name"
    touch "$deps/.complete"
  fi
) 9>"$cache/pydeps/.lock"
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
cp -al "$deps" "$venv" 2>/dev/null || cp -a "$deps" "$venv"
rm -f "$venv/.complete"
abs=$(cd "$venv" && pwd)
# Scripts name their interpreter, and activate its directory, by path; sed
# writes new files, so the cache's copies keep theirs.
grep -rlIZ -- "$deps" "$venv/bin" | xargs -0 -r sed -i "s|$deps|$abs|g"
"$venv/bin/pip" install --quiet --no-deps -e "$project[$extras]"
