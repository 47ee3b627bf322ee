/*
 * fake-e2b/runtime/private/etc_layer.h — the /etc a box gets (etc_layer.c): made for the box from
 * its template, never a copy of the host's. Knows no box struct: backend_files.c calls it with
 * paths.
 */
#ifndef FAKE_E2B_ETC_LAYER_H
#define FAKE_E2B_ETC_LAYER_H

#include "template.h"

#include <stdbool.h>
#include <sys/types.h>

/* E2B's host name (its template builder writes it to /etc/hostname and /etc/hosts). */
#define FK_BOX_HOSTNAME "e2b.local"

/*
 * Writes the /etc of template `t` at `dst` (a new directory, root's): the users and groups of a
 * Debian base system plus the template's user (shadow entries locked, no password), E2B's
 * hostname and hosts, a resolver (with `own_dns` the box's egress proxy, as E2B's 8.8.8.8; else
 * the host's nameservers, the box sharing its network), nsswitch, sudoers (passwordless sudo
 * for the user when the template has it), UTC as time zone; and from the host's /etc only the
 * public files on the allowlist in etc_layer.c (what the host's /usr needs to work), each
 * world-readable regular file, directory and symlink of them. 0, or -1 with errno.
 */
int fk__etc_make(const char *dst, const fk_template *t, bool own_dns);

/* A fresh /etc/machine-id (random, as systemd-machine-id-setup makes one) at `path`, mode 0444,
 * owned by `owner` (host ids). 0, or -1 with errno. */
int fk__etc_machine_id(const char *path, uid_t owner);

#endif /* FAKE_E2B_ETC_LAYER_H */
