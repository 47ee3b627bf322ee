#!/usr/bin/env bash
# tests/vm/run-v2.sh: runs fake-e2b's cgroup tests on a cgroup v2-only kernel, as a fresh Debian
# 12 boots it (the test machine is a cgroup v1 hybrid). Boots Debian 12's kernel (6.1) in QEMU
# with this machine's / shared read-only (9p, virtio) under a tmpfs overlay for writes (tmpfs
# /tmp and /var/tmp), cgroup2 alone at /sys/fs/cgroup (cgroup_no_v1=all), runs
# tests/vm/v2-checks.sh (or a ctest selection) on BUILD_DIR there and prints the results on the
# serial console, which is this script's output. About 3.5 minutes on the 2-core test machine (5.5 within the full suite).
#
#   tests/vm/run-v2.sh BUILD_DIR                   (tests/vm/v2-checks.sh: the cgroup backend's tests)
#   tests/vm/run-v2.sh BUILD_DIR CTEST_REGEX       (ctest -R CTEST_REGEX, e.g. 'fake_runtime')
#   SBX_VM_CMD='tests/fake/isolation/test_fake_isolation' tests/vm/run-v2.sh BUILD_DIR
#   tests/vm/run-v2.sh --fetch-kernel              (scripts/install-deps.sh: Debian's kernel, unpacked)
#
# Accelerator: KVM when it can run a stock kernel; on a PVM host (module kvm_pvm: /dev/kvm
# creates VMs but runs only kernels built as PVM guests, as on the test machine, where the
# Debian kernel hangs right after decompression) QEMU's TCG, software emulation with a thread
# per CPU; SBX_VM_ACCEL=kvm|tcg forces one. The VM has no user namespaces for its sandboxes:
# its / (9p, overlay) has no idmapped mounts, so fake-e2b runs them as on such machines (said
# at start); the cgroup code is the same either way.
#
# Exit: that of what ran in the VM (0: all passed); 77 (ctest's SKIP_RETURN_CODE) with the
# reason when this machine cannot run it: not root, no /dev/kvm, no qemu-system-x86_64 or
# static busybox, no kernel in SBX_VM_KERNEL_DIR (default /var/cache/sandbox-e2b/vm-kernel);
# 1 when the VM did not report (boot failure, or SBX_VM_TIMEOUT seconds, default 1000).
set -euo pipefail

KDIR=${SBX_VM_KERNEL_DIR:-/var/cache/sandbox-e2b/vm-kernel}
TIMEOUT=${SBX_VM_TIMEOUT:-1000}
MEM_MB=${SBX_VM_MEM_MB:-3072}

skip() {
	echo "SKIP: $*"
	exit 77
}

if [ "${1:-}" = "--fetch-kernel" ]; then
	# apt-get download + dpkg-deb -x: the package's boot hooks (initramfs, grub) never run and
	# this machine's own kernel stays as it is
	[ -e "$KDIR/.complete" ] && {
		echo "run-v2: kernel present in $KDIR"
		exit 0
	}
	pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	[ -n "$pkg" ] || {
		echo "run-v2: no linux-image-amd64 in apt's lists" >&2
		exit 1
	}
	tmp=$(mktemp -d /var/tmp/sbx-vm-kernel-XXXXXX)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && apt-get download -q "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
	deb=$(ls "$tmp"/*.deb)
	rm -rf "$KDIR.new"
	mkdir -p "$KDIR.new"
	dpkg-deb -x "$deb" "$KDIR.new"
	touch "$KDIR.new/.complete"
	rm -rf "$KDIR"
	mv "$KDIR.new" "$KDIR"
	echo "run-v2: $pkg unpacked in $KDIR"
	exit 0
fi

BUILD=${1:?usage: run-v2.sh BUILD_DIR [CTEST_REGEX]}
REGEX=${2:-} # none: tests/vm/v2-checks.sh
BUILD=$(cd "$BUILD" && pwd)
CMD=${SBX_VM_CMD:-} # instead of ctest: a command line to run in BUILD (debugging one program)
SRC=$(cd "$(dirname "$0")/../.." && pwd)

[ "$(id -u)" -eq 0 ] || skip "needs root (fake-e2b's isolation runs as root, and so do its tests)"
[ -c /dev/kvm ] || skip "no /dev/kvm"
QEMU=$(command -v qemu-system-x86_64 || true)
[ -n "$QEMU" ] || skip "no qemu-system-x86_64 (package qemu-system-x86)"
BUSYBOX=/bin/busybox
file_static() { [ -x "$1" ] && ! ldd "$1" >/dev/null 2>&1; }
file_static "$BUSYBOX" || skip "no static $BUSYBOX (package busybox-static)"
[ -e "$KDIR/.complete" ] || skip "no kernel in $KDIR (tests/vm/run-v2.sh --fetch-kernel)"
VMLINUZ=$(ls "$KDIR"/boot/vmlinuz-* 2>/dev/null | head -1)
[ -n "$VMLINUZ" ] || skip "no vmlinuz in $KDIR/boot"
KVER=${VMLINUZ##*/vmlinuz-}
MODDIR=$KDIR/lib/modules/$KVER
# KVM_CREATE_VM must work (a nested machine may expose /dev/kvm and refuse it)
# KVM when it can run a stock kernel; a PVM host (kvm_pvm: nested virtualization without VT-x,
# which creates VMs but runs only kernels built as PVM guests) or none: TCG, software, slower
ACCEL=${SBX_VM_ACCEL:-}
if [ -z "$ACCEL" ]; then
	ACCEL=tcg
	if [ -c /dev/kvm ] && [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ]; then
		set +e
		timeout 3 "$QEMU" -machine none,accel=kvm -nodefaults -display none -S </dev/null >/dev/null 2>&1
		[ $? -eq 124 ] && ACCEL=kvm
		set -e
	fi
fi
case $ACCEL in
kvm) CPU="-cpu host" ;;
tcg) CPU="-cpu max" ACCEL=tcg,thread=multi ;;
*) skip "SBX_VM_ACCEL=$ACCEL: kvm or tcg" ;;
esac

WORK=$(mktemp -d /var/tmp/sbx-vm-XXXXXX)
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT

# ---------------------------------------------------------------- the initramfs
# modules, with what each depends on (read from the .ko's modinfo: the package has no
# modules.dep, depmod runs in its postinst), in load order
declare -A KO
while IFS= read -r f; do
	n=${f##*/}
	n=${n%.ko}
	KO[${n//-/_}]=$f
done < <(find "$MODDIR/kernel" -name '*.ko')
ORDER=()
declare -A SEEN
add_mod() {
	local m=${1//-/_} d
	[ -n "${SEEN[$m]:-}" ] && return
	SEEN[$m]=1
	[ -n "${KO[$m]:-}" ] || return 0 # built into the kernel
	for d in $(tr '\0' '\n' <"${KO[$m]}" | sed -n 's/^depends=//p' | tr ',' ' '); do
		add_mod "$d"
	done
	ORDER+=("$m")
}
for m in virtio_pci virtio_blk 9pnet_virtio 9p overlay loop ext4 crc32c_generic; do
	add_mod "$m"
done
mkdir -p "$WORK/initrd"/{bin,dev,proc,sys,lower,rw,newroot,mod}
cp "$BUSYBOX" "$WORK/initrd/bin/busybox"
for m in "${ORDER[@]}"; do cp "${KO[$m]}" "$WORK/initrd/mod/$m.ko"; done
printf '%s\n' "${ORDER[@]}" >"$WORK/initrd/mod/order"

cat >"$WORK/initrd/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /mod/order); do insmod /mod/$m.ko 2>/dev/null || echo "vm: insmod $m failed"; done
fail() { echo "vm: $*"; echo "VM-RESULT rc=125"; echo o > /proc/sysrq-trigger; sleep 60; }
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /lower || fail "9p mount"
mount -t tmpfs -o mode=0755 tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot || fail "overlay"
mkdir -p /newroot/lib/modules
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/bash GUEST_SH
EOF
chmod +x "$WORK/initrd/init"

# ---------------------------------------------------------------- what runs inside
# WORK is on this machine's /, which the VM sees: its PID 1 runs guest.sh from there
GUEST=$WORK/guest
mkdir -p "$GUEST"
cat >"$GUEST/guest.sh" <<EOF
#!/bin/bash
# PID 1 of the VM: a v2-only machine, then ctest, then power off
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
mkdir -p /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
# the checkout and the build may live under a directory the fresh tmpfs mounts below hide (a
# clone in /tmp, as CI may make): held aside first, put back at the same paths after
keep() {
	local i=0 d
	for d in "$SRC" "$BUILD"; do
		case "\$d" in
		/tmp/* | /var/tmp/* | /run/*)
			if [ "\$1" = aside ]; then
				mkdir -p /mnt/keep\$i && mount --bind "\$d" /mnt/keep\$i
			else
				mkdir -p "\$d" && mount --move /mnt/keep\$i "\$d"
			fi
			;;
		esac
		i=\$((i + 1))
	done
}
keep aside
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /var/tmp
mount -t tmpfs tmpfs /run
keep back
ip link set lo up
hostname sbx-vm
echo "vm: kernel \$(uname -r), /sys/fs/cgroup: \$(stat -f -c %T /sys/fs/cgroup), controllers: \$(cat /sys/fs/cgroup/cgroup.controllers)"
cd "$BUILD"
if [ -n "$CMD" ]; then
	$CMD 2>&1
elif [ -n '$REGEX' ]; then
	ctest --test-dir "$BUILD" -R '$REGEX' --output-on-failure --timeout 900 -j2 2>&1
else
	bash "$SRC/tests/vm/v2-checks.sh" "$BUILD" 2>&1
fi
rc=\$?
echo "VM-RESULT rc=\$rc"
sync
echo o > /proc/sysrq-trigger
sleep 60
EOF
chmod +x "$GUEST/guest.sh"
sed -i "s#GUEST_SH#$GUEST/guest.sh#" "$WORK/initrd/init"
(cd "$WORK/initrd" && find . | "$BUSYBOX" cpio -o -H newc 2>/dev/null) | gzip -1 >"$WORK/initrd.gz"

# ---------------------------------------------------------------- boot
LOG=$WORK/console.log
set +e
timeout --foreground "$TIMEOUT" "$QEMU" -machine q35 -accel ${ACCEL} ${CPU} -smp 2 -m "$MEM_MB" \
	-nodefaults -no-reboot -display none -serial stdio \
	-kernel "$VMLINUZ" -initrd "$WORK/initrd.gz" \
	-append "console=ttyS0 panic=-1 cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1 rw" \
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
	</dev/null 2>&1 | stdbuf -oL tr -d '\r' | tee "$LOG"
qrc=${PIPESTATUS[0]}
set -e
rc=$(sed -n 's/^VM-RESULT rc=\([0-9]*\).*/\1/p' "$LOG" | tail -1)
if [ -z "$rc" ]; then
	echo "run-v2: the VM did not report a result (qemu exit $qrc; timeout ${TIMEOUT}s)"
	exit 1
fi
exit "$rc"
