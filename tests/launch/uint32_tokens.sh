#!/usr/bin/env bash
# Trains on an llm.c uint32 token file (magic 20240801, version 7), as llm.c writes for Llama 3: 4096
# tokens from 65536 up, all below 128256 except token 1000, which is MAX_TOKEN. Run through expect_exit.sh,
# which checks the status, the time and the message; exits 77 (a skip) without python3 to write the file.
# usage: uint32_tokens.sh TIERZERO MAX_TOKEN train-flags...
set -u
tierzero=$1 max_token=$2
shift 2
command -v python3 >/dev/null || { echo "uint32_tokens.sh: no python3 to write the token file"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
python3 - "$d/tokens.bin" "$max_token" <<'EOF' || exit 2
import struct, sys
path, top = sys.argv[1], int(sys.argv[2])
tokens = [65536 + (i * 7919) % 62720 for i in range(4096)]
tokens[1000] = top
header = [20240801, 7, len(tokens)] + [0] * 253
with open(path, "wb") as f:
    f.write(struct.pack("<256i", *header))
    f.write(struct.pack("<%dI" % len(tokens), *tokens))
EOF
"$tierzero" train --data "$d/tokens.bin" "$@"
