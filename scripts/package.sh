#!/usr/bin/env bash
# Build every installable artifact into dist/ (README "Install"):
#
#   bash scripts/package.sh            # BUILD_DIR (build-pkg) and OUT (dist) may be set
#
#   dist/sandbox-e2b-<v>.tgz                 npm package, engine for this platform inside
#   dist/sandbox_e2b-<v>-py3-none-<tag>.whl  Python wheel, the same engine inside
#   dist/sandbox-e2b_<v>_<arch>.deb          the CLI               (CPack, DEB generator)
#   dist/libsandbox-e2b0_<v>_<arch>.deb      the shared library
#   dist/libsandbox-e2b-dev_<v>_<arch>.deb   headers, static library, sandbox-e2b.pc
#   dist/fake-e2b_<v>_<arch>.deb             fake-e2b and its systemd unit
#   dist/SHA256SUMS
#
# <v> is the CMake project version (CMakeLists.txt), the only place it is set.
# The engine (the sandbox-e2b binary, whose `serve` the packages talk to) runs on
# a machine with none of the build dependencies: every shared library it loads
# except glibc's is copied beside it (bin/../lib, found through an $ORIGIN
# RUNPATH), and the wheel's platform tag names the newest glibc symbol version
# it needs. Works offline: needs the build dependencies, patchelf, file, npm, and Debian's
# python3-setuptools, python3-wheel and python3-pip (scripts/install-deps.sh --package).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-pkg}
OUT=${OUT:-dist}
PY=/usr/bin/python3 # Debian's, with its setuptools and wheel: nothing is fetched

say() { printf '== %s\n' "$*"; }
die() {
	printf 'package.sh: %s\n' "$*" >&2
	exit 1
}
for tool in cmake cpack patchelf npm objdump dpkg-shlibdeps file; do
	command -v "$tool" >/dev/null || die "needs $tool (scripts/install-deps.sh --package installs it)"
done
"$PY" -c 'import setuptools, wheel, pip' 2>/dev/null ||
	die "needs Debian's python3-setuptools, python3-wheel and python3-pip for $PY (scripts/install-deps.sh --package)"

say "build ($BUILD_DIR, prefix /usr)"
cmake -S . -B "$BUILD_DIR" -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_TESTING=OFF -DSBX_WERROR=ON >/dev/null
cmake --build "$BUILD_DIR" -j2 >/dev/null
VERSION=$(cat "$BUILD_DIR/version.txt")
B=$(cd "$BUILD_DIR" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/sandbox-e2b-*.tgz "$OUT"/sandbox_e2b-*.whl "$OUT"/*.deb "$OUT"/SHA256SUMS
STAGE=$B/stage
rm -rf "$STAGE"
mkdir -p "$STAGE"

case "$(uname -m)" in
x86_64) ARCH=x64 ;;
aarch64) ARCH=arm64 ;;
*) die "no package platform name for $(uname -m)" ;;
esac
PLATFORM=linux-$ARCH # Node's process.platform-process.arch, the prebuild's folder name

say "debs (cpack)"
(cd "$B" && cpack -G DEB -B "$STAGE/cpack" >/dev/null)
cp "$STAGE"/cpack/*.deb "$OUT"/

say "engine for $PLATFORM"
ENGINE=$STAGE/engine
mkdir -p "$ENGINE/bin" "$ENGINE/lib"
cp "$B/cli/sandbox-e2b" "$ENGINE/bin/"
# The closure of shared libraries, as the dynamic loader resolves it here; glibc's
# own (package libc6) stay the system's, everything else is bundled.
NOTICES=$STAGE/THIRD-PARTY-NOTICES
{
	echo "Third-party software in the sandbox-e2b engine (bin/sandbox-e2b, lib/)"
	echo
	echo "The engine is built from this project's sources (LICENSE, NOTICE) and links the"
	echo "shared libraries in lib/, copied unmodified (stripped, RUNPATH set) from these"
	echo "Debian 12 packages. Each one's license follows, from the package's copyright file."
	echo "The system's GNU C Library (libc6) is used, not bundled."
} >"$NOTICES"
declare -A libs_of=()
order=()
while read -r lib path; do
	real=$(readlink -f "$path")
	pkg=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$real" 2>/dev/null || true)
	pkg=${pkg%%:*}
	[ -n "$pkg" ] || die "$path belongs to no Debian package: cannot name its license"
	[ "$pkg" = libc6 ] && continue
	cp "$real" "$ENGINE/lib/$lib"
	chmod 0644 "$ENGINE/lib/$lib"
	[ -n "${libs_of[$pkg]:-}" ] || order+=("$pkg")
	libs_of[$pkg]="${libs_of[$pkg]:-}${libs_of[$pkg]:+, }$lib"
done < <(ldd "$B/cli/sandbox-e2b" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
for pkg in "${order[@]}"; do
	[ -r "/usr/share/doc/$pkg/copyright" ] || die "no /usr/share/doc/$pkg/copyright"
	{
		printf '\n%s\n' "================================================================================"
		dpkg-query -W -f '${Package} ${Version} (source ${source:Package}): ' "$pkg" | head -1
		printf '%s\n' "${libs_of[$pkg]}"
		printf '%s\n\n' "================================================================================"
		cat "/usr/share/doc/$pkg/copyright"
	} >>"$NOTICES"
done
strip --strip-unneeded "$ENGINE/bin/sandbox-e2b" "$ENGINE"/lib/*
patchelf --set-rpath '$ORIGIN/../lib' "$ENGINE/bin/sandbox-e2b"
for f in "$ENGINE"/lib/*; do patchelf --set-rpath '$ORIGIN' "$f"; done
# Nothing may resolve outside lib/ but glibc: a library the loop missed fails here.
if ldd "$ENGINE/bin/sandbox-e2b" | awk '$2 == "=>"' | grep -v "=> $ENGINE/bin/\.\./lib/" |
	grep -vE '/(libc|libm|libresolv|libpthread|libdl|librt)\.so'; then
	die "the engine resolves the libraries above outside its lib/"
fi
"$ENGINE/bin/sandbox-e2b" --version | grep -qx "sandbox-e2b $VERSION" ||
	die "the engine does not say version $VERSION"
# The newest glibc symbol version any bundled file needs: the wheel's manylinux tag.
GLIBC=$(for f in "$ENGINE/bin/sandbox-e2b" "$ENGINE"/lib/*; do objdump -T "$f"; done |
	grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
[ -n "$GLIBC" ] || die "cannot tell which glibc the engine needs"
GLIBC_MAJOR=${GLIBC%%.*}
GLIBC_MINOR=${GLIBC#*.}
GLIBC_MINOR=${GLIBC_MINOR%%.*}
PLAT_TAG=manylinux_${GLIBC_MAJOR}_${GLIBC_MINOR}_$(uname -m)
echo "engine needs glibc >= $GLIBC_MAJOR.$GLIBC_MINOR; $(ls "$ENGINE/lib" | wc -l) libraries bundled"

# Relative links in a shipped README must name files that ship with it.
check_links() { # DIR FILE...
	local dir=$1 f link
	shift
	for f in "$@"; do
		while read -r link; do
			link=${link%%#*}
			[ -z "$link" ] && continue
			[ -e "$(dirname "$dir/$f")/$link" ] || die "$f links to $link, which the package does not ship"
		done < <(grep -o '](\([^)]*\))' "$dir/$f" | sed 's/^](//; s/)$//' | grep -vE '^(https?:|mailto:|#)' || true)
	done
}

# The project's docs/ pages a shipped file links (UP + docs/X, UP being the way from the file's
# place in the repository to its top): copied into DEST (the package's folder for them), and
# the file's links rewritten to PREFIX + X.
ship_docs() { # FILE UP DEST PREFIX
	local f up=${2//./\\.}
	while read -r f; do
		[ -f "docs/$f" ] || die "$1 links to $2docs/$f, which does not exist"
		mkdir -p "$3/$(dirname "$f")"
		cp "docs/$f" "$3/$f"
	done < <(grep -o "](${up}docs/[^)#]*" "$1" | sed "s#^](${up}docs/##" | sort -u || true)
	sed -i "s#](${up}docs/#]($4#g" "$1"
}

say "npm"
NPM=$STAGE/npm
mkdir -p "$NPM"
(cd bindings/node && cp -r README.md index.d.ts package.json src examples .capybara-plugin "$NPM"/)
mkdir -p "$NPM/prebuilds/$PLATFORM" "$NPM/docs/fake-e2b"
cp -r "$ENGINE/bin" "$ENGINE/lib" "$NPM/prebuilds/$PLATFORM/"
cp fake-e2b/README.md fake-e2b/SECURITY.md "$NPM/docs/fake-e2b/"
cp bindings/MIGRATING.md "$NPM/docs/"
cp LICENSE NOTICE "$NOTICES" "$NPM/"
sed -i 's#](\.\./\.\./fake-e2b/#](docs/fake-e2b/#g; s#](\.\./MIGRATING\.md#](docs/MIGRATING.md#g' "$NPM/README.md"
ship_docs "$NPM/README.md" ../../ "$NPM/docs" docs/
ship_docs "$NPM/docs/fake-e2b/README.md" ../ "$NPM/docs" ../
check_links "$NPM" README.md docs/fake-e2b/README.md
# package.json's own "files" decides what ships; the staged copy adds the prebuilds
# and the notices to it.
node -e '
const fs = require("fs"), p = process.argv[1], pkg = JSON.parse(fs.readFileSync(p, "utf8"))
pkg.files.push("examples", "prebuilds", "docs", "LICENSE", "NOTICE", "THIRD-PARTY-NOTICES")
fs.writeFileSync(p, JSON.stringify(pkg, null, 2) + "\n")' "$NPM/package.json"
(cd "$NPM" && npm pack --silent --pack-destination "$OUT" >/dev/null)
TGZ=$OUT/sandbox-e2b-$VERSION.tgz
[ -f "$TGZ" ] || die "npm pack made no $TGZ"
tar -tzf "$TGZ" >"$STAGE/npm.list"
grep -qx "package/prebuilds/$PLATFORM/bin/sandbox-e2b" "$STAGE/npm.list" || die "$TGZ has no engine"

say "wheel ($PLAT_TAG)"
WH=$STAGE/python
mkdir -p "$WH"
cp -r bindings/python/pyproject.toml bindings/python/README.md bindings/python/src "$WH"/
rm -rf "$WH"/src/*.egg-info
find "$WH/src" -name __pycache__ -prune -exec rm -rf {} +
mkdir -p "$WH/src/sandbox_e2b/_engine" "$WH/src/sandbox_e2b/docs/fake-e2b"
cp -r "$ENGINE/bin" "$ENGINE/lib" "$WH/src/sandbox_e2b/_engine/"
cp fake-e2b/README.md fake-e2b/SECURITY.md "$WH/src/sandbox_e2b/docs/fake-e2b/"
cp LICENSE NOTICE "$NOTICES" "$WH"/
cp -r bindings/python/examples "$WH/src/sandbox_e2b/docs/"
mkdir -p "$WH/src/sandbox_e2b/docs/bindings"
cp bindings/MIGRATING.md "$WH/src/sandbox_e2b/docs/bindings/"
sed -i 's#](\.\./\.\./fake-e2b/#](src/sandbox_e2b/docs/fake-e2b/#g; s#](examples/#](src/sandbox_e2b/docs/examples/#g; s#](\.\./MIGRATING\.md#](src/sandbox_e2b/docs/bindings/MIGRATING.md#g' "$WH/README.md"
ship_docs "$WH/README.md" ../../ "$WH/src/sandbox_e2b/docs" src/sandbox_e2b/docs/
ship_docs "$WH/src/sandbox_e2b/docs/fake-e2b/README.md" ../ "$WH/src/sandbox_e2b/docs" ../
check_links "$WH" README.md src/sandbox_e2b/docs/fake-e2b/README.md
# The engine makes the wheel platform-specific (not pure), with no Python ABI: py3-none-<tag>.
cat >"$WH/setup.py" <<EOF
# Written by scripts/package.sh: the wheel carries a native engine and no extension module.
from setuptools import setup
from setuptools.dist import Distribution
from wheel.bdist_wheel import bdist_wheel


class EngineDistribution(Distribution):
    def has_ext_modules(self):  # installs into platlib, as a binary package does
        return True


class EngineWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return ("py3", "none", "$PLAT_TAG")


setup(distclass=EngineDistribution, cmdclass={"bdist_wheel": EngineWheel})
EOF
"$PY" - "$WH/pyproject.toml" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
old = 'sandbox_e2b = ["py.typed"]'
assert old in s, "pyproject.toml: package-data line moved"
s = s.replace(old, 'sandbox_e2b = ["py.typed", "_engine/bin/*", "_engine/lib/*", "docs/*", "docs/*/*", "docs/*/*/*"]')
s = s.replace('license = { text = "Apache-2.0" }',
              'license = { text = "Apache-2.0" }\n# LICENSE, NOTICE, THIRD-PARTY-NOTICES go in the wheel\'s .dist-info')
open(p, "w").write(s)
EOF
cat >>"$WH/pyproject.toml" <<'EOF'

[tool.setuptools]
license-files = ["LICENSE", "NOTICE", "THIRD-PARTY-NOTICES"]
EOF
(cd "$WH" && "$PY" -m pip wheel -q --no-build-isolation --no-index --no-deps -w "$OUT" .) ||
	die "the wheel did not build"
WHL=$OUT/sandbox_e2b-$VERSION-py3-none-$PLAT_TAG.whl
[ -f "$WHL" ] || die "no $WHL"
"$PY" - "$WHL" <<'EOF' || die "$WHL lacks the engine or its executable bit"
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
i = z.getinfo("sandbox_e2b/_engine/bin/sandbox-e2b")
assert (i.external_attr >> 16) & 0o111, "not executable"
assert any(n.endswith(".dist-info/THIRD-PARTY-NOTICES") or n.endswith("THIRD-PARTY-NOTICES") for n in z.namelist())
EOF

(cd "$OUT" && sha256sum "$(basename "$TGZ")" "$(basename "$WHL")" ./*.deb | sed 's# \./# #' >SHA256SUMS)
say "dist/ (version $VERSION)"
(cd "$OUT" && ls -l --block-size=K "$(basename "$TGZ")" "$(basename "$WHL")" ./*.deb | awk '{print $5, $9}')
