/*
 * fake-e2b/tstore/builds.h: templates as E2B's API sees them and their builds.
 *
 * Two kinds of template: the runtime's own (runtime/template.h: `base`, `capybara-sandbox`;
 * their templateID is their name) and the ones built through the API (POST /v3/templates, then
 * POST /v2/templates/{id}/builds/{buildID}). A built template has a templateID (20 [a-z0-9]),
 * a name (its alias), builds (uuid buildIDs; status waiting → building → ready | error, log
 * entries) and tags (tag → buildID). A build runs in a sandbox of the runtime with no network
 * (builder.c): FROM a template (a runtime one, `e2bdev/base` = `base`, or a built one), then
 * RUN / COPY / ENV / WORKDIR / USER steps, then the start and ready commands; its files are
 * committed as a layer (fk_box_commit) under <state>/.templates/<buildID>, and what the steps
 * left (user, workdir, environment, start and ready commands) is what its sandboxes boot with.
 * COPY sources are tar archives the client uploaded (fk_tstore_upload_*), kept by their hash
 * under <state>/.template-files/.
 *
 * Thread-safe: one lock guards the store; builds run on their own threads, which
 * fk_tstore_free stops (their sandboxes destroyed) and joins.
 */
#ifndef FK_BUILDS_H
#define FK_BUILDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

typedef struct fk_tstore fk_tstore;

/* Results of the store's operations (the API maps them onto statuses). */
enum {
	FK_T_OK = 0,
	FK_T_NOTFOUND = -1,  /* no such template, build, tag or upload */
	FK_T_INVALID = -2,   /* bad name, tag, hash or body */
	FK_T_CONFLICT = -3,  /* the build was already started */
	FK_T_FAILED = -4,    /* out of memory, disk, a thread */
	FK_T_FORBIDDEN = -5, /* a template fake-e2b serves (E2B: another team's) */
	FK_T_NOSPACE = -6,   /* the state directory's file system cannot hold it (507) */
};

#define FK_ENVD_VERSION "0.6.13" /* the envd whose wire fake-e2b speaks (README "Which envd") */

/* What a sandbox of a template boots with. */
typedef struct fk_tboot {
	char *template_id; /* canonical templateID */
	char *base;        /* the runtime template (template.h) its files start from */
	char *layer;   /* a built template's committed files (fk_box_options.layer_dir), or NULL */
	char *user;    /* default user */
	char *workdir; /* default working directory */
	char **envs;   /* "K=V" from ENV steps */
	size_t n_envs;
	char *start_cmd, *ready_cmd; /* NULL when none */
	/* Set by fk_tstore_resolve: the template's first alias (E2B's firstAlias: its name, ""
	 * for an unnamed snapshot) and the limits its build gives a sandbox (E2B: the build's
	 * vcpu and ram_mb; a served template's are E2B's default sandbox's, 2 and 512). */
	char *alias;
	unsigned cpu_count, memory_mb;
} fk_tboot;

void fk_tboot_clear(fk_tboot *b); /* accepts a zeroed one */

/* seed: 32 bytes upload tokens are derived from. `state` NULL (ephemeral): templates live as
 * long as the store, and what an earlier run left under <state>/.templates and
 * .template-files is removed. Otherwise (a kept server, README "What survives what") every
 * template's record is written after each change (builds requested, started, ended; tags,
 * public, snapshots, deletes; spawn counts as of the template's last other change) and read
 * back here: a build that was waiting or building ends as an error ("the server stopped during
 * this build"), a ready one whose layer is gone too; layers no build names are removed; the
 * uploaded archives stay. */
typedef struct fk_state fk_state;
int fk_tstore_new(fk_tstore **out, fk_rt *rt, const unsigned char seed[32], fk_state *state);
/* Stand-ins for images fromImage names (fake-e2b builds offline): "IMAGE=TEMPLATE" each, the
 * image as Docker names it ("ubuntu:22.04", "docker.io/library/ubuntu:22.04" and "ubuntu" =
 * "ubuntu:latest" are one image), the template a runtime or built one, looked up when a build
 * starts. `e2bdev/base` (the SDK's fromBaseImage) always stands for `base`, and an image named
 * as a template ("capybara-sandbox", "mine:v2"; ":latest" is its default tag) for that
 * template. Call before serving. FK_T_INVALID for a malformed entry. */
int fk_tstore_add_images(fk_tstore *s, const char *const *images, size_t n);

/* The template standing for `image`, or NULL (caller frees). */
char *fk_tstore_image(fk_tstore *s, const char *image);

/* Stops running builds (their sandboxes destroyed), joins them, frees. Accepts NULL. */
void fk_tstore_free(fk_tstore *s);

/* The template a sandbox create names (templateID, name, or name:tag), as a boot spec; only
 * ready builds count. FK_T_NOTFOUND. */
int fk_tstore_resolve(fk_tstore *s, const char *ref, fk_tboot *out);

/* Starts the start command of `boot` in box `box_id` and runs the ready command until it
 * succeeds (what E2B's snapshot of the build already holds): 0, or FK_EIO with err set when the
 * start command ends first or the ready command does not succeed within 120 s. */
int fk_tboot_start(fk_rt *rt, const char *box_id, const fk_tboot *boot, fk_err *err);

/* POST /v3/templates: `name` ("alias" or "alias:tag"), extra `tags` (array of strings or NULL).
 * A new build of the template of that name (created when new). *reply: TemplateRequestResponseV3.
 * FK_T_INVALID with msg. */
int fk_tstore_request(fk_tstore *s, const char *name, json_t *tags, unsigned cpu_count,
                      unsigned memory_mb, json_t **reply, char *msg, size_t cap);

/* GET /templates/{id}/files/{hash}: *present, and the upload token for the URL. FK_T_NOTFOUND
 * (template), FK_T_INVALID (hash not 64 hex digits). token: 65 bytes. */
int fk_tstore_file_link(fk_tstore *s, const char *template_id, const char *hash, int *present,
                        char token[65]);

/* The upload of one archive (PUT to the link): begin checks the token (FK_T_NOTFOUND when it is
 * not this server's), write appends (FK_T_FAILED past max bytes or on a disk error,
 * FK_T_NOSPACE when the state directory's file system is full), finish
 * keeps the file under its hash (or drops it when ok is 0). */
typedef struct fk_upload fk_upload;
int fk_tstore_upload_begin(fk_tstore *s, const char *template_id, const char *hash,
                           const char *token, uint64_t max_bytes, fk_upload **out);
int fk_tstore_upload_write(fk_upload *u, const void *data, size_t len);
int fk_tstore_upload_finish(fk_upload *u, int ok); /* frees u; accepts NULL */

/* POST /v2/templates/{id}/builds/{buildID}: `spec` (TemplateBuildStartV2) starts the build on a
 * thread. FK_T_NOTFOUND, FK_T_CONFLICT (started before), FK_T_INVALID (msg). */
int fk_tstore_build_start(fk_tstore *s, const char *template_id, const char *build_id, json_t *spec,
                          char *msg, size_t cap);

/* GET .../builds/{buildID}/status: TemplateBuildInfo with the log entries at `min_level` or
 * above (fk_tstore_level; 0 for all), from the `offset`th of those, at most `limit`.
 * FK_T_NOTFOUND. */
int fk_tstore_build_status(fk_tstore *s, const char *template_id, const char *build_id,
                           size_t offset, size_t limit, int min_level, json_t **reply);

/* E2B's log levels in order: debug 0, info 1, warn 2, error 3; -1 for another name. */
int fk_tstore_level(const char *name);

/* GET .../builds/{buildID}/logs: TemplateBuildLogsResponse {logs}: at most `limit` entries at
 * `min_level` or above, oldest first from the entry at `cursor_ms` on (ms since the epoch; -1:
 * from the first), or with `backward` newest first from before `cursor_ms` (-1: from the
 * last); none while the build waits for its start, as E2B. FK_T_NOTFOUND. */
int fk_tstore_build_logs(fk_tstore *s, const char *template_id, const char *build_id,
                         int64_t cursor_ms, bool backward, int min_level, size_t limit,
                         json_t **reply);

/* GET /templates: Template of every built template (snapshots are not listed, as E2B lists
 * source 'template' only), oldest first. */
int fk_tstore_list(fk_tstore *s, json_t **reply);

/* A page position in a template's builds: its build's creation time and buildID. */
typedef struct fk_tcursor {
	int64_t ns;
	char id[37];
} fk_tcursor;
/* GET /templates/{templateID}: TemplateWithBuilds with at most `limit` builds, newest first,
 * those after `after` when not NULL; next->id is "" when no build follows the page, else the
 * page's last build. By templateID only (E2B). FK_T_NOTFOUND, FK_T_FORBIDDEN (a template
 * fake-e2b serves). */
int fk_tstore_get(fk_tstore *s, const char *template_id, const fk_tcursor *after, size_t limit,
                  json_t **reply, fk_tcursor *next);

/* PATCH /templates/{id}, /v2/templates/{id} (templateID or name, ":tag" ignored): sets public
 * (0 or 1; -1 leaves it, E2B's empty body), *names the template's names. FK_T_NOTFOUND,
 * FK_T_FORBIDDEN (msg). */
int fk_tstore_update(fk_tstore *s, const char *ref, int is_public, json_t **names, char *msg,
                     size_t cap);

/* A sandbox was created from template_id (a templateID): its spawn count and last spawn. */
void fk_tstore_spawned(fk_tstore *s, const char *template_id);

/* The canonical templateID of a built template or snapshot named by ref (templateID or name,
 * ":tag" ignored). FK_T_NOTFOUND, FK_T_FORBIDDEN (a served one). */
int fk_tstore_template_id(fk_tstore *s, const char *ref, char out[21]);

/* GET /templates/aliases/{alias}: *reply TemplateAliasResponse. FK_T_NOTFOUND. */
int fk_tstore_alias(fk_tstore *s, const char *alias, json_t **reply);

/* POST /templates/tags: target "name:tag" (or "name": its newest ready build), tags to point
 * at the same build. *reply AssignedTemplateTags. FK_T_NOTFOUND, FK_T_INVALID (msg). */
int fk_tstore_tags_assign(fk_tstore *s, const char *target, json_t *tags, json_t **reply, char *msg,
                          size_t cap);
/* DELETE /templates/tags. FK_T_NOTFOUND, FK_T_INVALID (msg). */
int fk_tstore_tags_remove(fk_tstore *s, const char *name, json_t *tags, char *msg, size_t cap);
/* GET /templates/{id}/tags (id: templateID or name): array of TemplateTag. FK_T_NOTFOUND. */
int fk_tstore_tags_list(fk_tstore *s, const char *template_id, json_t **reply);

/* ---- snapshots.c: snapshots (templates made of a sandbox's files), deletion, fork layers ---- */
/* POST /sandboxes/{id}/snapshots of sandbox `sandbox_id`, whose template is `template_ref`:
 * `name` ("alias" or "alias:tag"; NULL: unnamed, tag "default"). `take(ud, layer_dir, err)`
 * copies the sandbox's files into layer_dir (0; -1 the sandbox is not running; -2 failed). A
 * name already taken gets a new build on that template. *reply: SnapshotInfo {snapshotID:
 * "<name or templateID>:<tag>", names}. FK_T_INVALID (msg), FK_T_NOTFOUND (not running),
 * FK_T_FAILED (msg). */
int fk_tstore_snapshot(fk_tstore *s, const char *sandbox_id, const char *template_ref,
                       const char *name, int (*take)(void *ud, const char *layer_dir, fk_err *err),
                       void *ud, json_t **reply, char *msg, size_t cap);
/* GET /snapshots: SnapshotInfo of every snapshot (newest first; one per tag), those of
 * `sandbox_id` and/or named `name` ("name[:tag]" or a templateID) when not NULL. */
int fk_tstore_snapshots(fk_tstore *s, const char *sandbox_id, const char *name, json_t **reply);
/* DELETE /templates/{templateID} (a templateID or name, ":tag" ignored): the template, its
 * builds and their files. FK_T_NOTFOUND, FK_T_FORBIDDEN (a runtime template), FK_T_CONFLICT (a
 * build in progress); msg. */
int fk_tstore_delete(fk_tstore *s, const char *ref, char *msg, size_t cap);
/* A fork's boot: `template_ref`'s with the files `take` copies (as for fk_tstore_snapshot) in a
 * throwaway layer. 0, or take's -1/-2 (err set). Free with fk_tstore_fork_layer_drop. */
int fk_tstore_fork_layer(fk_tstore *s, const char *template_ref,
                         int (*take)(void *ud, const char *layer_dir, fk_err *err), void *ud,
                         fk_tboot *out, fk_err *err);
/* Removes the layer's files and clears the boot. */
void fk_tstore_fork_layer_drop(fk_tboot *boot);

/* ---- builder.c (used by templates.c, which starts builds) ---- */
typedef struct fk_tbuild fk_tbuild;
/* Runs build `b` to its end (ready or error); called on the build's own thread. */
void fk__build_run(fk_tstore *s, fk_tbuild *b);

#endif
