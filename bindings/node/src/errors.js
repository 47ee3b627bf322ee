// Error classes of the package. A sandbox that no longer exists is a
// SandboxGoneError (the contract's gone: the host recreates it); every other
// failure is a SandboxError, an ordinary Error that also carries the
// library's code name ("invalid", "timeout", "http", ...), the HTTP status and
// the E2B error code when the server answered. Messages never hold a secret.

export class SandboxGoneError extends Error {
  constructor(message, options) {
    super(message, options)
    this.name = 'SandboxGoneError'
    this.code = 'gone'
  }
}

export class SandboxError extends Error {
  constructor(message, { code, httpStatus, e2bCode, rpcCode, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause })
    this.name = 'SandboxError'
    this.code = code
    this.httpStatus = httpStatus
    this.e2bCode = e2bCode
    this.rpcCode = rpcCode
  }

  // E2B's name for the HTTP status (the `Sandbox` shape's errors are SandboxErrors too).
  get statusCode() {
    return this.httpStatus
  }
}

// The serve child exited (crashed, killed) while a call was in flight.
export class BridgeError extends Error {
  constructor(message) {
    super(message)
    this.name = 'BridgeError'
    this.code = 'bridge'
  }
}

// serve's -32001 says what a JSON-RPC client sends; say what a package user does, from its data
// (bindings/protocol/methods.md): config_error, why the config serve found in the environment
// was refused; config_vars, the variables behind that config, or those a config needs when
// there was none (the engine's rule: the package keeps no list of its own). An engine that
// sends no config_vars: its own message.
export function notConfiguredMessage(data, serveMessage) {
  const vars = data.config_vars
  if (!Array.isArray(vars) || !vars.length || !vars.every((v) => typeof v === 'string')) return serveMessage
  const refused = data.config_error
  if (typeof refused === 'string' && refused) {
    return (
      `no deployment config: the one from the environment was refused (${refused}); ` +
      `pass one to createE2BSandbox(config) / new Client({ config }) or fix ${vars.join(' / ')} ` +
      '(README "Configuration")'
    )
  }
  return (
    'no deployment config: pass one to createE2BSandbox(config) / new Client({ config }) ' +
    `({ apiKey, template, ... }) or set ${vars.join(' and ')} (README "Configuration")`
  )
}

// A JSON-RPC error object from `sandbox-e2b serve` as an Error. An error without data is
// named by serve's own table, initialize's error_codes ({ "-32602": "invalid_params", ... }).
// A not_configured error's e2bCode is the refused config's reason (config_template, ...).
export function errorFromRpc(e, errorCodes) {
  const data = e && typeof e.data === 'object' && e.data !== null ? e.data : {}
  let message = typeof e?.message === 'string' ? e.message : 'sandbox-e2b serve failed'
  const notConfigured = data.code === 'not_configured'
  if (notConfigured) message = notConfiguredMessage(data, message)
  if (data.code === 'gone') return new SandboxGoneError(message)
  return new SandboxError(message, {
    code: data.code ?? errorCodes?.[String(e?.code)] ?? 'internal',
    httpStatus: data.http_status,
    e2bCode: notConfigured ? data.config_reason : data.e2b_code,
    rpcCode: e?.code,
  })
}
