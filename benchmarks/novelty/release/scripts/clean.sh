#!/usr/bin/env bash
set -eu
rm -rf build
echo "cleaned"
