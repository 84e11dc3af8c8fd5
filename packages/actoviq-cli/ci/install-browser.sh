#!/usr/bin/env bash
# Install what the actoviq-cli web-page tests drive: Debian's chromium and chromium-driver
# (/usr/bin/chromium, /usr/bin/chromedriver; Selenium uses them, nothing is downloaded at test
# time). Idempotent, and never fails CI: when they cannot be installed it prints why and exits 0
# (the browser test then skips with that reason).
set -u

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    echo "install-browser: $(chromium --version 2>/dev/null | head -1); $(chromedriver --version 2>/dev/null | head -1)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-browser: apt-get not available; the actoviq-cli browser test will skip."
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "install-browser: not root and no passwordless sudo; the actoviq-cli browser test will skip."
        exit 0
    fi
fi
log=$(mktemp)
if ! ($SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver) >"$log" 2>&1; then
    echo "install-browser: apt-get install chromium chromium-driver failed; the actoviq-cli browser test will skip. Last lines:"
    tail -5 "$log"
    rm -f "$log"
    exit 0
fi
rm -f "$log"
echo "install-browser: installed $(chromium --version 2>/dev/null | head -1)"
