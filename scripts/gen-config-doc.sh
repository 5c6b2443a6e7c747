#!/usr/bin/env bash
# Rewrites docs/configuration.md from a built tierzero binary's `help --markdown` (the flag and DeepSpeed key
# tables in launch/). Usage: scripts/gen-config-doc.sh [BINARY]   (default: build/launch/tierzero)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/launch/tierzero}
[[ -x "$bin" ]] || { echo "gen-config-doc.sh: no binary at $bin (build first, or name it)" >&2; exit 2; }
tmp=$(mktemp docs/.configuration.md.XXXXXX)
trap 'rm -f "$tmp"' EXIT
"$bin" help --markdown > "$tmp"
mv "$tmp" docs/configuration.md
trap - EXIT
echo "wrote docs/configuration.md ($(wc -l < docs/configuration.md) lines) from $bin"
