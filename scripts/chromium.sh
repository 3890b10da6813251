#!/usr/bin/env bash
# The headless browser the docs test opens the built site in: Debian's chromium and its
# driver. Installed from the distribution's packages when missing (as root, with apt-get);
# otherwise this says how to get them and fails.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "scripts/chromium.sh: installing Debian's chromium and chromium-driver (apt-get) for the docs' browser test"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  exit 0
fi
echo "scripts/chromium.sh: chromium and chromedriver not found; install them (Debian: apt-get install chromium chromium-driver) for the docs' browser test" >&2
exit 1
