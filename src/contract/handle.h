/*
 * contract/handle.h: what the public command handles (sbx_process of sandbox/process.h,
 * sbx_pty of sandbox/pty.h) share inside the library: the provider's state for the command,
 * the vtable that knows that state, and the command's pid; made and checked the same way for
 * both (contract/process.c, contract/pty.c). A handle must not outlive its provider.
 * Internal to the library.
 */
#ifndef SBX_CONTRACT_HANDLE_H
#define SBX_CONTRACT_HANDLE_H

#include "contract/provider.h"

typedef struct sbx__handle {
	const sbx_provider_vtable *vt;
	void *impl; /* the provider's handle state */
	uint32_t pid;
} sbx__handle;

/*
 * A handle of `size` bytes (a struct whose first member is an sbx__handle) holding vt, impl
 * and pid; sbx__free() it after freeing impl. NULL with SBX_ENOMEM in `err` when out of
 * memory: impl is freed first, with free_impl.
 */
void *sbx__handle_new(size_t size, const sbx_provider_vtable *vt, void *impl, uint32_t pid,
                      void (*free_impl)(void *impl), sbx_error *err);

/*
 * The checks a call on a handle starts with: h not NULL ("handle is NULL"), then sig not
 * aborted ("aborted"). 0, SBX_EINVALID or SBX_EABORTED.
 */
int sbx__handle_check(const void *h, const sbx_signal *sig, sbx_error *err);

/*
 * The checks a call that opens a handle (or lists or kills by pid) starts with, in this order:
 * sbx__provider_check, `has` (the provider implements `method`, else SBX_EINTERNAL "provider P
 * does not implement METHOD"), then as sbx__call_check the `out` pointer (with SBX__NEED_OUT)
 * and the sandbox id (with SBX__NEED_ID) are not NULL ("out is NULL", "id is NULL").
 */
int sbx__provider_check_method(const sbx_provider *p, const sbx_signal *sig, const char *method,
                               bool has, unsigned need, const void *out, const char *id,
                               sbx_error *err);

#endif
