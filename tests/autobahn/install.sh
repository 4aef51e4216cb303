#!/usr/bin/env bash
# Installs the Autobahn WebSocket test suite (autobahntestsuite, Python 2 code) for run.py:
# pyenv's Python 2.7 with the packages of requirements27.txt in tests/autobahn/py27/
# (pip --target, --no-deps: the versions are pinned there, each the last one that still
# supports 2.7). Does nothing when that folder is already installed from the same list.
#
#   PY27=/path/to/python2.7 bash tests/autobahn/install.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="$here/py27"
stamp="$target/.installed"
PYENV_ROOT="${PYENV_ROOT:-$HOME/.pyenv}"
PY27="${PY27:-$(ls -d "$PYENV_ROOT"/versions/2.7.*/bin/python 2>/dev/null | sort -V | tail -n 1)}"
if [ -z "$PY27" ] || ! "$PY27" -c 'import sys; assert sys.version_info[:2] == (2, 7)' 2>/dev/null; then
  echo "install.sh: no Python 2.7 (pyenv install 2.7.18, or PY27=/path/to/python2.7)" >&2
  exit 2
fi
if [ -f "$stamp" ] && [ -f "$target/.python" ] && cmp -s "$stamp" "$here/requirements27.txt"; then
  exit 0
fi
rm -rf "$target"
"$PY27" -m pip install --quiet --disable-pip-version-check \
  --no-deps --target "$target" -r "$here/requirements27.txt"
# the check run.py relies on: wstest imports (zope is a namespace package: addsitedir)
"$PY27" -W ignore::UserWarning -c "import site; site.addsitedir('$target'); import autobahntestsuite.wstest"
echo "$PY27" > "$target/.python"
cp "$here/requirements27.txt" "$stamp"
echo "install.sh: autobahntestsuite installed in $target with $PY27"
