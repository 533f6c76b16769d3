# identity_setup.sh — sourced by codegen_identity.sh and train_identity.sh
# (REFERENCE_AXC [AXC]): sets root (the checkout), ref and new (the two
# axc binaries: the second argument, else the checkout's build) and tmp (a
# scratch directory removed on exit); exits 2 with the usage line when an
# axc is missing.
root=$(cd "$(dirname "$0")/.." && pwd)
ref=${1:-}
new=${2:-$root/build/bin/axc}
if [ -z "$ref" ] || [ ! -x "$ref" ] || [ ! -x "$new" ]; then
    echo "usage: $0 REFERENCE_AXC [AXC]   (both executable)" >&2
    exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
