#!/bin/sh
# Fetch and prepare the real C and Java projects bench/harvest.py harvests, from Debian's
# source packages (the deb-src line lives in a temporary apt folder used only for this
# `apt-get source`; nothing is committed):
#   c     cJSON 1.7.15 (package cjson): plain Make, honours CFLAGS, its own `make test`
#         (bench/harvest.py --c DEST --c-build 'make cJSON_test' --c-test 'make test');
#   java  Apache Commons Codec 1.15 (libcommons-codec-java), whose JUnit 4 tests need only
#         Debian's junit4, hamcrest and commons-lang3 jars (apt-get install
#         default-jdk-headless junit4 libcommons-lang3-java); bench/harvest.py --java DEST.
# Usage: sh bench/native_projects.sh c|java DEST   (DEST must not exist)
set -eu
KIND=$1
DEST=$2
APT=$(mktemp -d)
trap 'rm -rf "$APT"' EXIT
mkdir -p "$APT/sources.list.d" "$APT/lists/partial" "$APT/get"
cat > "$APT/sources.list.d/src.sources" <<SOURCES
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
OPTS="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$APT/sources.list.d -o Dir::State::Lists=$APT/lists"
apt-get $OPTS -qq update
case $KIND in
  c) PACKAGE=cjson VERSION=1.7.15-1+deb12u4 ;;
  java) PACKAGE=libcommons-codec-java VERSION=1.15-1 ;;
  *) echo "usage: sh bench/native_projects.sh c|java DEST" >&2; exit 2 ;;
esac
(cd "$APT/get" && apt-get $OPTS -qq source --download-only "$PACKAGE=$VERSION")
dpkg-source -x --no-check "$APT"/get/"${PACKAGE}_${VERSION}".dsc "$DEST" >/dev/null
rm -rf "$DEST/debian"
[ "$KIND" = java ] || exit 0
CP=/usr/share/java/junit4.jar:/usr/share/java/hamcrest-core.jar:/usr/share/java/commons-lang3.jar
# Its build: main and test classes with javac (the harvest adds -g); resources copied.
cat > "$DEST/execbench-build.sh" <<BUILD
set -e
mkdir -p build/main build/test
javac -nowarn -encoding UTF-8 -d build/main \$(find src/main/java -name '*.java')
javac -nowarn -encoding UTF-8 -d build/test -cp build/main:$CP \$(find src/test/java -name '*.java')
cp -r src/main/resources/. build/main/
cp -r src/test/resources/. build/test/
BUILD
# Its tests: the phonetic encoders' (org.apache.commons.codec.language, Beider-Morse
# aside), string algorithms of loops and branches, run by JUnit 4's runner.
cat > "$DEST/execbench-test.sh" <<TEST
java -cp build/main:build/test:$CP org.junit.runner.JUnitCore \$(cd src/test/java && ls org/apache/commons/codec/language/*Test.java | sed 's|/|.|g; s|\.java\$||')
TEST
