/*
 * fake-e2b/api/admin.h: the test-only admin API under /_fake/ (README.md
 * "Admin API"): fault rules, the request log, internal sandbox state. A view
 * over the test kit and the registry.
 */
#ifndef FK_API_ADMIN_H
#define FK_API_ADMIN_H

#include "app.h"

enum MHD_Result fk_admin_faults_add(fk_call *c);
enum MHD_Result fk_admin_faults_list(fk_call *c);
enum MHD_Result fk_admin_faults_clear(fk_call *c);
enum MHD_Result fk_admin_requests_list(fk_call *c);
enum MHD_Result fk_admin_requests_clear(fk_call *c);
enum MHD_Result fk_admin_sandboxes(fk_call *c);

#endif
