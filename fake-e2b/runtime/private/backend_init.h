/*
 * fake-e2b/runtime/private/backend_init.h — a box's PID 1 as the server hands it over:
 * backend_boot.c makes its arguments on the host (every path, mount option, fd and netlink
 * request), clones it and waits for it; backend_init.c is the init itself, which makes system
 * calls only, in named stages (a failure names its stage).
 */
#ifndef FAKE_E2B_BACKEND_INIT_H
#define FAKE_E2B_BACKEND_INIT_H

#include "backend_int.h"

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The /dev nodes of every box: its own (mknod), bound from the host's only where mknod is
 * refused. */
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
#define N_DEV_NODES (sizeof(dev_nodes) / sizeof(dev_nodes[0]))

struct init_bind {
	char src[64];
	char dst[4096];
	int tree_fd; /* idmapped read-only copy of src (user namespace), -1: bind src */
};

/* Everything the init needs, made by the server before the clone (the init copies it with its
 * memory). */
struct init_args {
	char root[4096];
	struct init_bind binds[N_HOST_DIRS];
	int n_binds;
	char dev[4096];
	char dev_files[N_DEV_NODES][4200];
	char dev_pts[4200], dev_shm[4200], dev_ptmx[4200];
	char dev_links[4][4200];
	char proc[4200], proc_sys[4300], proc_sysrq[4300];
	char boot_id[4200], proc_boot_id[4300]; /* this boot's id, bound over the kernel's */
	char etc[4200];          /* overlay mount point, "" when /etc is a plain copy */
	char etc_template[4200]; /* the /etc template on the host (bound when no etc_lower_fd) */
	char dir[4200];          /* the box's dir: where disk_tree_fd is attached */
	int disk_tree_fd;        /* a copy of the box's disk, -1 if it has none */
	int etc_lower_fd;        /* idmapped copy of the /etc template, -1 if none */
	int userns_fd;           /* the box's user namespace, -1 if none */
	char dev_opts[128];      /* /dev and /dev/shm tmpfs options (owner: the box's root) */
	uid_t dev_owner;         /* the box's root on the host: owner of its /dev nodes */
	char shm_opts[128];
	int ready_fd;         /* write end: {stage (enum init_stage), errno} */
	fk_cg_join cg;        /* its cgroups: made in the v2 one, joining the v1 ones */
	char masked[5][4300]; /* /proc files hidden behind /dev/null */
	int n_masked;
	const struct sock_fprog *seccomp; /* installed last, with the capabilities dropped */
	int last_cap;
	int life_fd;     /* read end of the runtime's life pipe, -1: live restore (none) */
	int claim_fd;    /* live restore: the id range claim it holds for its life, -1 if none */
	bool own_net;    /* a network namespace of its own: bring `lo` up */
	bool ports_open; /* ip_unprivileged_port_start 0 (no bind program for the box's root) */
	_Alignas(8) char anyip[64];    /* netlink request (read as an nlmsghdr): every IPv4 address
	                                  local, for the proxy */
	size_t anyip_len;              /* 0: egress none */
	_Alignas(8) char own_addr[64]; /* netlink request: the box's address (FK_BOX_ADDR) on
	                                  `lo` */
	size_t own_addr_len;
	char *argv_area; /* the server's argv strings (/proc/1/cmdline), wiped in the init */
	size_t argv_len;
};

/* The init (clone's function, `arg` a struct init_args): its stages, then reaping for the box's
 * life. A failed stage writes {stage, errno} to a->ready_fd and exits; success writes {0, 0}. */
int fk__init_main(void *arg);
/* The name of a stage number an init wrote ("attach its disk"), "?" for none. */
const char *fk__init_stage_name(int stage);

#endif /* FAKE_E2B_BACKEND_INIT_H */
