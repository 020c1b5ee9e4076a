#!/bin/sh
set -e
rm -rf out
mkdir -p out
for f in src/*.java; do echo "javac $f"; done
javac -Xlint:all -d out src/*.java
echo "running tests"
java -cp out TestMain
