#!/usr/bin/env bash
# Installs DeepSpeed 0.14.4 (the newest that runs on Debian's python3-torch 1.13) from PyPI
# into SITE (default build/deepspeed-site) for /usr/bin/python3, with no C++ ops built, and its
# pure-Python dependencies; numpy, psutil and packaging come from Debian. Prints one
# "SKIPPED: ..." line and exits 1 when it cannot (no torch, no network, no pip).
set -u
SITE=${1:-build/deepspeed-site}
PY=/usr/bin/python3
skip() { echo "SKIPPED: DeepSpeed reference: $*"; exit 1; }
"$PY" -c 'import torch, numpy, psutil, packaging' 2>/dev/null ||
  skip "$PY lacks torch, numpy, psutil or packaging (python3-torch, python3-numpy, python3-psutil, python3-packaging)"
"$PY" -m pip --version >/dev/null 2>&1 || skip "$PY has no pip (python3-pip)"
mkdir -p "$SITE.partial" || skip "cannot create $SITE.partial"
log="$SITE.partial/pip.log"
pip_install() {
  DS_BUILD_OPS=0 timeout 900 "$PY" -m pip install --quiet --disable-pip-version-check \
    --no-input --target "$SITE.partial" "$@" >>"$log" 2>&1
}
if ! pip_install --no-deps deepspeed==0.14.4 ||
   ! pip_install "pydantic<2" hjson py-cpuinfo tqdm ninja; then
  skip "pip could not install deepspeed==0.14.4 into $SITE ($(tail -1 "$log"))"
fi
rm -rf "$SITE" && mv "$SITE.partial" "$SITE" || skip "cannot move $SITE.partial to $SITE"
echo "setup_deepspeed: DeepSpeed 0.14.4 in $SITE"
