#!/usr/bin/env bash
# Install Debian's Chromium for the annotation interface's real-browser test
# (tests/annotation_interface/test_browser.py drives it headless over the DevTools protocol).
# Never fails the caller: without Chromium (no root, no apt, no network) that one test skips
# with a reason and everything else runs.
set -u

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  echo "chromium: already installed ($(command -v chromium || command -v chromium-browser))"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "chromium: not installed and no root/sudo to install it; the browser test will skip" >&2
    exit 0
  fi
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium: not installed and apt-get is not available; the browser test will skip" >&2
  exit 0
fi

if $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium; then
  echo "chromium: installed ($(command -v chromium))"
else
  echo "chromium: apt-get install failed; the browser test will skip" >&2
fi
exit 0
