/* sandbox.h: umbrella header of libsandbox-e2b. */
#ifndef SANDBOX_H
#define SANDBOX_H
#include "sandbox/common.h"
#include "sandbox/e2b.h"
#include "sandbox/error.h"
#include "sandbox/files.h"
#include "sandbox/info.h"
#include "sandbox/lifetime.h"
#include "sandbox/log.h"
#include "sandbox/metrics.h"
#include "sandbox/paths.h"
#include "sandbox/ports.h"
#include "sandbox/process.h"
#include "sandbox/pty.h"
#include "sandbox/sandbox.h"
#include "sandbox/signal.h"
#include "sandbox/validate.h"
#include "sandbox/watch.h"
#endif
