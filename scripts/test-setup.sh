#!/usr/bin/env bash
# Installs everything the test suite needs into the active Python environment, with no prompt:
# the project with its test extra, and the third-party programs the tests drive (each section says which tests).
# The README's test command runs this, then pytest; .ci/run runs that same command.
set -euo pipefail
cd "$(dirname "$0")/.."

# The project, its test dependencies and every optional extra the tests exercise.
python -m pip install -q -e '.[test]'
