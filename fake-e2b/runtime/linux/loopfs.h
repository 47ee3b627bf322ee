/*
 * fake-e2b/runtime/linux/loopfs.h — a file system image as a detached mount: a loop device over
 * the image and a mount that lives only as a file descriptor (the new mount API, Linux 5.8 for
 * LOOP_CONFIGURE). Knows no box: paths in, -1 and errno out.
 */
#ifndef FAKE_E2B_LINUX_LOOPFS_H
#define FAKE_E2B_LINUX_LOOPFS_H

/* Mounts the `fstype` file system in the image file `img` through a free loop device, attached
 * nowhere: returns the mount's fd (O_CLOEXEC), to reach it by path (/proc/self/fd/N/...) or
 * clone it (open_tree) into a mount namespace. The loop device frees itself when the last
 * reference to the mount is gone (LO_FLAGS_AUTOCLEAR): closing the fd and ending every
 * namespace it was attached in leaves nothing behind, even after a crash. Discard is off on the
 * loop device (its queue's discard_max_bytes 0; an ext4 is also mounted nodiscard, and
 * errors=remount-ro): a discard would punch holes in `img`, handing back space reserved for it
 * (fallocate). *discard_err (may be NULL) is 0, or the errno that kept discard on. */
int fk_lx_loop_mount(const char *img, const char *fstype, int *discard_err);

/* The file system the loop device over `img` already holds (a mount of it lives on in another
 * mount namespace), mounted once more, detached: the same superblock, never a second one over
 * the image. The device is the one whose backing file is `img` (device and inode checked
 * before and after the mount). Its fd, or -1 with errno (ENOENT: no loop device reads it). */
int fk_lx_loop_remount(const char *img, const char *fstype);

/* Copies file `src` to a new file `dst` (mode 0600, O_EXCL) as sparse as `src`: only its data
 * extents (SEEK_DATA/SEEK_HOLE) are read and written, its holes stay holes. 0, or -1 with errno
 * (`dst` may be left partly written). */
int fk_lx_sparse_copy(const char *src, const char *dst);

#endif /* FAKE_E2B_LINUX_LOOPFS_H */
