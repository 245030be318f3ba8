#!/usr/bin/env bash
# Installs a real Prometheus server and promtool into .cache/prometheus/ without root, for
# tests/metrics/test_prometheus.py and for trying conf/prometheus/ by hand (docs/metrics.md):
# Debian bookworm's `prometheus` package, fetched with `apt-get download` and unpacked with
# `dpkg-deb -x`; the binaries then sit at .cache/prometheus/usr/bin/ and need only libc (Go,
# statically linked). Idempotent: a second run with the same version does nothing. Where the
# machine's package lists do not know the version (a fresh container), apt reads Debian's
# lists into .cache/apt/ first, again without root. Called by jobs/bootstrap.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="2.42.0+ds-5+deb12u1"
dest="$root/.cache/prometheus"
if [ -x "$dest/usr/bin/prometheus" ] && [ "$(cat "$dest/.version" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
  echo "jobs/prometheus.sh: no apt-get/dpkg-deb (not Debian): Prometheus not installed;" \
       "tests/metrics/test_prometheus.py will fail until .cache/prometheus/usr/bin/prometheus" \
       "exists" >&2
  exit 0
fi
echo "installing Prometheus $version into .cache/prometheus (once) ..."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# apt drops to its `_apt` user to download, who cannot write our temporary folder: download
# as whoever runs this (for a user other than root, apt does so anyway).
apt=(-o "APT::Sandbox::User=$(id -un)")
if ! apt-cache show "prometheus=$version" >/dev/null 2>&1; then
  lists="$root/.cache/apt"
  mkdir -p "$lists/lists/partial" "$lists/cache/archives/partial"
  apt+=(-o "Dir::State::Lists=$lists/lists" -o "Dir::Cache=$lists/cache" -o Debug::NoLocking=1)
  apt-get "${apt[@]}" -qq update
fi
(cd "$work" && apt-get "${apt[@]}" -qq download "prometheus=$version")
rm -rf "$dest" && mkdir -p "$dest"
dpkg-deb -x "$work"/prometheus_*.deb "$dest"
"$dest/usr/bin/prometheus" --version >/dev/null
echo "$version" > "$dest/.version"
