#!/usr/bin/env bash
# Install what the actoviq-workflow sandbox needs: bubblewrap and libseccomp (the seccomp layer of
# both process executors; pyseccomp loads libseccomp.so.2). Idempotent, and never fails CI: when a
# package cannot be installed or bwrap cannot start here, it prints why and exits 0 (the tests
# that need it then skip with the reason from the executor's capabilities()).
set -u

probe() {
    bwrap --unshare-all --die-with-parent --ro-bind / / --proc /proc --dev /dev true 2>&1
}

have_libseccomp() {
    ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2'
}

if command -v bwrap >/dev/null 2>&1 && have_libseccomp; then
    echo "install-sandbox: bwrap already installed: $(bwrap --version 2>&1); libseccomp present"
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
    if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bubblewrap libseccomp2 \
        >/dev/null 2>&1; then
        echo "install-sandbox: apt-get install bubblewrap libseccomp2 failed; sandbox tests skip."
        exit 0
    fi
    echo "install-sandbox: installed $(bwrap --version 2>&1) and libseccomp2"
fi

if output=$(probe); then
    echo "install-sandbox: bwrap can create namespaces here."
else
    echo "install-sandbox: bwrap is installed but cannot start a sandbox: ${output}"
    echo "install-sandbox: (user namespaces disabled? check kernel.unprivileged_userns_clone /"
    echo "install-sandbox:  user.max_user_namespaces / AppArmor userns restrictions)"
fi
exit 0
