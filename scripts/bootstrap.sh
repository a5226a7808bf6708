#!/usr/bin/env bash
# Makes a fresh machine (Node.js + npm only) ready to run Portico from sources:
# installs the pinned Bun from npm when missing or different, then the locked packages.
set -euo pipefail
cd "$(dirname "$0")/.."
BUN_VERSION=1.4.5
if ! command -v bun >/dev/null 2>&1 || [ "$(bun --version 2>/dev/null)" != "$BUN_VERSION" ]; then
  echo "bootstrap: installing bun@$BUN_VERSION from npm" >&2
  npm install -g "bun@$BUN_VERSION" >/dev/null 2>&1 || npm install -g "bun@$BUN_VERSION" >&2
fi
bun install --frozen-lockfile >&2
# Bun runs no package's install scripts unless package.json trusts it. The one it reports as
# blocked is protobufjs's (pulled in by the gRPC test client, @grpc/proto-loader): it only
# prints a warning about version ranges, and nothing needs it.
echo "bootstrap: 'Blocked 1 postinstall' is protobufjs's (a test dependency); it only prints a version warning and is not needed" >&2
