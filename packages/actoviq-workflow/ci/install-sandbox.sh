#!/usr/bin/env bash
# Install bubblewrap for the actoviq-workflow sandbox tests. Idempotent, and never fails CI:
# when bwrap cannot be installed or cannot start here, it prints why and exits 0 (the bubblewrap
# tests then skip and report the reason from BubblewrapWorkflowExecutor.capabilities()).
set -u

probe() {
    bwrap --unshare-all --die-with-parent --ro-bind / / --proc /proc --dev /dev true 2>&1
}

if command -v bwrap >/dev/null 2>&1; then
    echo "install-sandbox: bwrap already installed: $(bwrap --version 2>&1)"
else
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "install-sandbox: apt-get not available; bubblewrap tests will skip."
        exit 0
    fi
    SUDO=""
    if [ "$(id -u)" != "0" ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            SUDO="sudo -n"
        else
            echo "install-sandbox: not root and no passwordless sudo; bubblewrap tests will skip."
            exit 0
        fi
    fi
    if ! $SUDO apt-get update -qq >/dev/null 2>&1; then
        echo "install-sandbox: apt-get update failed; bubblewrap tests will skip."
        exit 0
    fi
    if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bubblewrap >/dev/null 2>&1; then
        echo "install-sandbox: apt-get install bubblewrap failed; bubblewrap tests will skip."
        exit 0
    fi
    echo "install-sandbox: installed $(bwrap --version 2>&1)"
fi

if output=$(probe); then
    echo "install-sandbox: bwrap can create namespaces here."
else
    echo "install-sandbox: bwrap is installed but cannot start a sandbox: ${output}"
    echo "install-sandbox: (user namespaces disabled? check kernel.unprivileged_userns_clone /"
    echo "install-sandbox:  user.max_user_namespaces / AppArmor userns restrictions)"
fi
exit 0
