#!/usr/bin/env bash
# Build the installed application and prove it works, as a user would get it (Linux).
#
#   bash installer/ci_build_and_test.sh        (called by .ci/run after the test suite)
#
# 1. python installer/build.py --check: the PyInstaller bundle, its --self-test, the .tar.gz
#    and the .deb;
# 2. the .tar.gz and the .deb hold what they should (launcher, desktop entry, icon, control);
# 3. dpkg -x into a temporary folder (always): the unpacked application's --self-test;
# 4. as root with dpkg: dpkg -i, `manifold-studio --self-test` from PATH (the installed
#    launcher), a third-party plugin wheel installed into a temporary plugin folder when the
#    plugin template and the `plugins` command exist, then dpkg --purge and a check that
#    nothing is left behind (the watched folders list exactly as before the installation).
# Exits non-zero at the first failure. Environment: PYTHON (default python), MANIFOLD_STUDIO_DIST
# (default dist/), MANIFOLD_STUDIO_SKIP_BUILD=1 (reuse dist/manifold-studio). Needs the "installer" extra (PyInstaller) and dpkg-deb.
set -euo pipefail
cd "$(dirname "$0")/.."
export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"
PYTHON="${PYTHON:-python}"
DIST="${MANIFOLD_STUDIO_DIST:-$PWD/dist}"
PKG=manifold-studio
step() { echo; echo "== installer: $*"; }
fail() { echo "installer: FAILED: $*" >&2; exit 1; }

TMP="$(mktemp -d)"
cleanup() {
  if [ "$(id -u)" = "0" ] && dpkg -s "$PKG" >/dev/null 2>&1 && [ -n "${INSTALLED_HERE:-}" ]; then
    dpkg --purge "$PKG" >/dev/null 2>&1 || true
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT

step "build the bundle, self-test it, make the .tar.gz and the .deb"
start=$(date +%s)
# MANIFOLD_STUDIO_SKIP_BUILD=1 repackages an existing bundle (quicker while working on packaging)
"$PYTHON" installer/build.py --dist "$DIST" --check ${MANIFOLD_STUDIO_SKIP_BUILD:+--skip-bundle}
echo "built in $(( $(date +%s) - start )) s; bundle: $(du -sh "$DIST/$PKG" | cut -f1)"
VERSION="$("$PYTHON" -c 'from importlib.metadata import version; print(version("manifold-studio"))')"
DEB="$(ls "$DIST"/${PKG}_"$VERSION"_*.deb)"
TARBALL="$(ls "$DIST"/${PKG}-"$VERSION"-linux-*.tar.gz)"

step "check what the bundle leaves out"
for unwanted in sklearn pytest _pytest tkinter matplotlib dask; do
  [ ! -e "$DIST/$PKG/_internal/$unwanted" ] || fail "the bundle contains $unwanted"
done
# the table readers' compiled parts: CSV/TSV (pandas) and Parquet (pyarrow); openpyxl (Excel) is pure
# Python, inside the archive: the self-test reads an Excel file through the loader
for wanted in pandas pyarrow; do
  [ -e "$DIST/$PKG/_internal/$wanted" ] || fail "the bundle lacks $wanted, which the table readers need"
done
if find "$DIST/$PKG" -iname "libQt6WebEngine*" -o -iname "libQt6Quick*" -o -iname "libQt63D*" | grep -q .; then
  fail "the bundle contains Qt modules the application does not use"
fi
echo "no scikit-learn, test tools, tkinter, matplotlib, dask, Qt WebEngine/Quick/3D; pandas and pyarrow present"

step "check the .tar.gz and the .deb"
tar -tzf "$TARBALL" > "$TMP/tar.txt"
grep -qx "$PKG-$VERSION/$PKG" "$TMP/tar.txt" || fail "$TARBALL has no $PKG-$VERSION/$PKG executable"
grep -q "^$PKG-$VERSION/_internal/manifold_studio.*\.\(dist\|egg\)-info/entry_points.txt$" "$TMP/tar.txt" \
  || fail "$TARBALL lacks manifold-studio's entry points (plugins would be lost)"
dpkg-deb --info "$DEB" > "$TMP/info.txt"
grep -q "^ Package: $PKG$" "$TMP/info.txt" || fail "control: wrong Package"
grep -q "^ Version: $VERSION$" "$TMP/info.txt" || fail "control: wrong Version"
dpkg-deb --contents "$DEB" | awk '{print $6}' | sed 's|^\./|/|' > "$TMP/contents.txt"
for path in /opt/$PKG/$PKG /usr/bin/$PKG /usr/share/applications/$PKG.desktop \
            /usr/share/icons/hicolor/256x256/apps/$PKG.png; do
  grep -qx "$path" "$TMP/contents.txt" || fail "$DEB does not install $path"
done
if grep -v -e "^/opt/$PKG" -e "^/usr/bin/\?$" -e "^/usr/bin/$PKG$" -e "^/usr/share/applications/" \
     -e "^/usr/share/icons/" -e "^/usr/share/\?$" -e "^/usr/\?$" -e "^/opt/\?$" -e "^/$" "$TMP/contents.txt"; then
  fail "$DEB installs files outside /opt/$PKG, its launcher, desktop entry and icon (listed above)"
fi
echo "$(wc -l < "$TMP/contents.txt") entries; $(du -h "$DEB" | cut -f1) .deb, $(du -h "$TARBALL" | cut -f1) .tar.gz"
if ! command -v desktop-file-validate >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  apt-get install -y -qq desktop-file-utils >/dev/null 2>&1 || true
fi
if command -v desktop-file-validate >/dev/null 2>&1; then
  dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./usr/share/applications/$PKG.desktop > "$TMP/$PKG.desktop"
  desktop-file-validate "$TMP/$PKG.desktop"
fi

step "dpkg -x into a temporary folder and self-test the unpacked application"
dpkg-deb -x "$DEB" "$TMP/root"
[ -x "$TMP/root/usr/bin/$PKG" ] || fail "the launcher is not executable"
grep -q "exec /opt/$PKG/$PKG " "$TMP/root/usr/bin/$PKG" || fail "the launcher does not start /opt/$PKG/$PKG"
"$TMP/root/opt/$PKG/$PKG" --self-test

if [ "$(id -u)" != "0" ] || ! command -v dpkg >/dev/null 2>&1; then
  step "not root: dpkg -i / --purge skipped (dpkg -x was tested)"
  exit 0
fi

step "dpkg -i, the installed self-test, dpkg --purge, nothing left behind"
WATCHED="/opt /usr/bin /usr/share/applications /usr/share/icons/hicolor"
if dpkg -s "$PKG" >/dev/null 2>&1; then
  echo "$PKG is installed already (an earlier run?): purging it first"
  dpkg --purge "$PKG"
fi
snapshot() { for d in $WATCHED; do [ -d "$d" ] && find "$d" -xdev 2>/dev/null; done | sort; }
snapshot > "$TMP/before.txt"
INSTALLED_HERE=1
if ! dpkg -i "$DEB"; then
  echo "dpkg -i could not configure the package (missing system libraries?): trying apt-get"
  apt-get install -y -qq "$DEB" || fail "the .deb does not install"
fi
# as a user would run it: a plain PATH (no virtual environment) and a clean environment
USER_ENV=(env -i "PATH=/usr/local/bin:/usr/bin:/bin" "HOME=$TMP/home" "QT_QPA_PLATFORM=$QT_QPA_PLATFORM")
mkdir -p "$TMP/home"
found="$("${USER_ENV[@]}" sh -c "command -v $PKG")"
[ "$found" = "/usr/bin/$PKG" ] || fail "$PKG on a plain PATH is '$found', not /usr/bin/$PKG"
(cd "$TMP" && "${USER_ENV[@]}" $PKG --self-test)

if [ -d examples/plugin-template ] && $PKG plugins --help >/dev/null 2>&1; then
  step "a third-party plugin wheel installed into the installed application"
  mkdir -p "$TMP/wheels"
  "$PYTHON" -c "import sys; from pathlib import Path; from manifold_studio.plugins.selfcheck import build_pure_wheel; \
print(build_pure_wheel(Path('examples/plugin-template'), Path(sys.argv[1])))" "$TMP/wheels"
  WHEEL="$(ls "$TMP"/wheels/*.whl | head -1)"
  # the plugin folder is per user: HOME is the temporary one, so nothing outside $TMP changes
  (cd "$TMP" && "${USER_ENV[@]}" $PKG plugins install "$WHEEL")
  (cd "$TMP" && "${USER_ENV[@]}" $PKG plugins list)
  (cd "$TMP" && "${USER_ENV[@]}" $PKG --self-test --no-window) | tee "$TMP/plugin-self-test.txt"
  lines_before=$(grep -c "^fit+extend" "$TMP/plugin-self-test.txt")
  (cd "$TMP" && "${USER_ENV[@]}" HOME="$TMP/other-home" $PKG --self-test --no-window) > "$TMP/plain-self-test.txt"
  [ "$lines_before" -gt "$(grep -c "^fit+extend" "$TMP/plain-self-test.txt")" ] \
    || fail "the template plugin's algorithm was not fitted by the installed application's self-test"
fi

# dpkg warns that it leaves /opt in place when other software lives there: that is correct
# (the package owns only /opt/manifold-studio), so that one line is filtered (installer/README.md)
dpkg --purge "$PKG" 2> >(grep -v "directory '/opt' not empty so not removed" >&2)
INSTALLED_HERE=
dpkg -s "$PKG" >/dev/null 2>&1 && fail "dpkg still lists $PKG after --purge"
snapshot > "$TMP/after.txt"
if ! diff "$TMP/before.txt" "$TMP/after.txt"; then
  fail "files were left behind (or removed) by the installation (diff above)"
fi
[ ! -e /opt/$PKG ] && [ ! -e /usr/bin/$PKG ] || fail "/opt/$PKG or /usr/bin/$PKG is still there"
echo "installed, self-tested and removed cleanly"
