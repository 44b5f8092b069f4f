#!/usr/bin/env bash
# Installs everything the test suite needs into the active Python environment, with no prompt:
# the project with its test extra, and the third-party programs the tests drive (each section says which tests).
# The README's test command runs this, then pytest; .ci/run runs that same command.
set -euo pipefail
cd "$(dirname "$0")/.."

# The project, its test dependencies and every optional extra the tests exercise (the test extra pulls in [ray]
# for the Ray tests of tests/batch/, which share one local Ray cluster per session: tests/batch/conftest.py).
python -m pip install -q -e '.[test]'

# The real MCP parents that tests/server/test_real_parent_sees_answer.py drives through `serve`, and the real ACP
# agents that tests/sessions/test_real_acp_agents_keep_sessions.py drives through the host's sessions, pinned, into
# the project-local npm prefix .tools/npm (gitignored). Codex CLI's and Claude Code's npm packages ship native
# binaries; Gemini CLI is a bundled node script; codex-acp runs its own pinned range of Codex (`codex app-server`,
# nested under it when it differs from the parent's) and claude-agent-acp the Claude Agent SDK (with its native
# Claude Code). Each installs only when its pinned version is not already there.
CODEX_VERSION=0.169.0
CLAUDE_CODE_VERSION=2.1.328
GEMINI_CLI_VERSION=0.61.0
CODEX_ACP_VERSION=2.6.0
CLAUDE_AGENT_ACP_VERSION=0.101.0
NPM_PREFIX=.tools/npm
if ! command -v npm >/dev/null 2>&1; then
    # Debian's Node.js and npm (Gemini CLI needs Node.js 20 or newer); root, or sudo without a prompt.
    as_root=()
    if [ "$(id -u)" -ne 0 ]; then as_root=(sudo -n); fi
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
installed_version() {  # the version of npm package $1 in $NPM_PREFIX, or nothing
    python - "$NPM_PREFIX/node_modules/$1/package.json" <<'PY'
import json, sys
try:
    print(json.load(open(sys.argv[1], encoding="utf-8"))["version"])
except (OSError, ValueError, KeyError):
    pass
PY
}
npm_packages=()
if [ "$(installed_version @openai/codex)" != "$CODEX_VERSION" ]; then
    npm_packages+=("@openai/codex@$CODEX_VERSION")
fi
if [ "$(installed_version @anthropic-ai/claude-code)" != "$CLAUDE_CODE_VERSION" ]; then
    npm_packages+=("@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION")
fi
if [ "$(installed_version @google/gemini-cli)" != "$GEMINI_CLI_VERSION" ]; then
    npm_packages+=("@google/gemini-cli@$GEMINI_CLI_VERSION")
fi
if [ "$(installed_version @agentclientprotocol/codex-acp)" != "$CODEX_ACP_VERSION" ]; then
    npm_packages+=("@agentclientprotocol/codex-acp@$CODEX_ACP_VERSION")
fi
if [ "$(installed_version @agentclientprotocol/claude-agent-acp)" != "$CLAUDE_AGENT_ACP_VERSION" ]; then
    npm_packages+=("@agentclientprotocol/claude-agent-acp@$CLAUDE_AGENT_ACP_VERSION")
fi
if [ "${#npm_packages[@]}" -gt 0 ]; then
    npm install --prefix "$NPM_PREFIX" --no-audit --no-fund --save-exact --loglevel=error "${npm_packages[@]}"
fi

# The dashboard's browser tests (tests/ui/) drive Debian's Chromium through Playwright for Python; Playwright's
# own browser download is never used.
if ! command -v chromium >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null
fi

# git 2.36 or newer (`worktree add --lock --reason`): tests/workspace/ and tests/server/test_serve_worktree_changes.py
# drive real repositories. Debian's git, only when git is missing or older; root, or sudo without a prompt.
git_version="$(git --version 2>/dev/null | sed -nE 's/^git version ([0-9]+)\.([0-9]+).*/\1 \2/p' || true)"
if [ -z "$git_version" ] || [ "$(printf '%s\n' "$git_version" "2 36" | sort -k1,1n -k2,2n | head -n1)" != "2 36" ]; then
    as_root=()
    if [ "$(id -u)" -ne 0 ]; then as_root=(sudo -n); fi
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git >/dev/null
fi

# setpriv (util-linux), which tests/acp_provider/test_provider_entry.py uses when the tests run as root: it drops
# CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so root meets a directory without search permission as a user does.
if [ "$(id -u)" -eq 0 ] && ! command -v setpriv >/dev/null 2>&1; then
    apt-get update -qq
    env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq util-linux >/dev/null
fi
