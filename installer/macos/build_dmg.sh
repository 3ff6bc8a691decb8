#!/usr/bin/env bash
# Put "Manifold Studio.app" into a compressed .dmg with a link to /Applications.
#
#   bash installer/macos/build_dmg.sh "dist/Manifold Studio.app" dist/manifold-studio-0.1.0-macos-arm64.dmg
#
# Called by `python installer/build.py --installer` on macOS (after PyInstaller made the .app).
# Runs on macOS only (hdiutil). Builds an x86_64 or arm64 image, whichever Python built the app.
#
# Signing and notarisation (needed so Gatekeeper opens the app without a warning; not done
# here because it needs the release manager's Apple Developer ID):
#   1. Sign every binary inside the app, then the app, with the hardened runtime. numba/llvmlite
#      generate machine code at run time, so the entitlements must allow it:
#        cat > entitlements.plist <<EOF  (com.apple.security.cs.allow-jit,
#          com.apple.security.cs.allow-unsigned-executable-memory,
#          com.apple.security.cs.disable-library-validation set to true)
#      MACOS_SIGN_IDENTITY="Developer ID Application: NAME (TEAMID)" \
#      MACOS_ENTITLEMENTS=entitlements.plist bash installer/macos/build_dmg.sh APP DMG
#      (this script then runs: codesign --deep --force --options runtime --timestamp
#       --entitlements "$MACOS_ENTITLEMENTS" --sign "$MACOS_SIGN_IDENTITY" APP, and signs the .dmg)
#   2. Notarise the signed .dmg and staple the ticket:
#        xcrun notarytool submit DMG --keychain-profile PROFILE --wait
#        xcrun stapler staple DMG
#      (PROFILE made once with `xcrun notarytool store-credentials`.) With MACOS_NOTARY_PROFILE
#      set, this script does both.
#   Unsigned builds (CI artefacts) open with right-click > Open, or after
#   `xattr -dr com.apple.quarantine "/Applications/Manifold Studio.app"`.
set -euo pipefail

APP="${1:?usage: build_dmg.sh PATH/TO/Manifold\ Studio.app OUT.dmg}"
DMG="${2:?usage: build_dmg.sh PATH/TO/Manifold\ Studio.app OUT.dmg}"
VOLUME="Manifold Studio"

if [[ ! -d "$APP" ]]; then
  echo "build_dmg.sh: $APP is not an app bundle (run python installer/build.py on macOS first)" >&2
  exit 2
fi
if ! command -v hdiutil >/dev/null 2>&1; then
  echo "build_dmg.sh: hdiutil not found: a .dmg can only be made on macOS" >&2
  exit 2
fi

if [[ -n "${MACOS_SIGN_IDENTITY:-}" ]]; then
  echo "signing $APP as $MACOS_SIGN_IDENTITY"
  codesign --deep --force --options runtime --timestamp \
    ${MACOS_ENTITLEMENTS:+--entitlements "$MACOS_ENTITLEMENTS"} \
    --sign "$MACOS_SIGN_IDENTITY" "$APP"
  codesign --verify --deep --strict --verbose=2 "$APP"
fi

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
cp -R "$APP" "$STAGE/"
ln -s /Applications "$STAGE/Applications"
rm -f "$DMG"
hdiutil create -volname "$VOLUME" -srcfolder "$STAGE" -fs HFS+ -format UDZO -imagekey zlib-level=9 -ov "$DMG"

if [[ -n "${MACOS_SIGN_IDENTITY:-}" ]]; then
  codesign --force --timestamp --sign "$MACOS_SIGN_IDENTITY" "$DMG"
fi
if [[ -n "${MACOS_NOTARY_PROFILE:-}" ]]; then
  xcrun notarytool submit "$DMG" --keychain-profile "$MACOS_NOTARY_PROFILE" --wait
  xcrun stapler staple "$DMG"
fi
echo "$DMG ($(du -h "$DMG" | cut -f1))"
