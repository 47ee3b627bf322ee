// E2B's error classes (the official `e2b` SDK's names and hierarchy), on the
// package's SandboxError so one `instanceof SandboxError` catches both shapes'
// failures. Each keeps what the engine said: code, httpStatus (statusCode, as
// E2B names it), e2bCode.
import { BridgeError, SandboxError, SandboxGoneError } from './errors.js'

export class TimeoutError extends SandboxError {
  constructor(message, info) {
    super(message, { code: 'timeout', ...info })
    this.name = 'TimeoutError'
  }
}

export class InvalidArgumentError extends SandboxError {
  constructor(message, info) {
    super(message, { code: 'invalid', ...info })
    this.name = 'InvalidArgumentError'
  }
}

export class NotEnoughSpaceError extends SandboxError {
  constructor(message, info) {
    super(message, info)
    this.name = 'NotEnoughSpaceError'
  }
}

export class NotFoundError extends SandboxError {
  constructor(message, info) {
    super(message, info)
    this.name = 'NotFoundError'
  }
}

export class FileNotFoundError extends NotFoundError {
  constructor(message, info) {
    super(message, { code: 'not_found', ...info })
    this.name = 'FileNotFoundError'
  }
}

export class SandboxNotFoundError extends NotFoundError {
  constructor(message, info) {
    super(message, { code: 'gone', ...info })
    this.name = 'SandboxNotFoundError'
  }
}

export class RateLimitError extends SandboxError {
  constructor(message, info) {
    super(message, { httpStatus: 429, ...info })
    this.name = 'RateLimitError'
  }
}

// As in E2B, not a SandboxError.
export class AuthenticationError extends Error {
  constructor(message, { code, httpStatus, e2bCode } = {}) {
    super(message)
    this.name = 'AuthenticationError'
    this.code = code
    this.httpStatus = httpStatus
    this.statusCode = httpStatus
    this.e2bCode = e2bCode
  }
}

// A command ended with a non-zero exit code (or was killed: exitCode -1).
export class CommandExitError extends SandboxError {
  constructor(result) {
    super(result.error, { code: 'exit' })
    this.result = result
    this.name = 'CommandExitError'
  }
  get exitCode() {
    return this.result.exitCode
  }
  get error() {
    return this.result.error
  }
  get stdout() {
    return this.result.stdout
  }
  get stderr() {
    return this.result.stderr
  }
}

// An error of the engine (errors.js) as E2B's class for the same cause.
export function toE2BError(e) {
  if (e instanceof SandboxGoneError) return new SandboxNotFoundError(e.message)
  if (!(e instanceof SandboxError) || e.constructor !== SandboxError) return e
  const info = { code: e.code, httpStatus: e.httpStatus, e2bCode: e.e2bCode, rpcCode: e.rpcCode }
  switch (e.code) {
    case 'timeout':
      return new TimeoutError(e.message, info)
    case 'invalid':
    case 'invalid_params':
      return new InvalidArgumentError(e.message, info)
    case 'http':
      if (e.httpStatus === 401 || e.httpStatus === 403) return new AuthenticationError(e.message, info)
      if (e.httpStatus === 429) return new RateLimitError(e.message, info)
      if (e.httpStatus === 507) return new NotEnoughSpaceError(e.message, info)
      if (e.httpStatus === 404) return new NotFoundError(e.message, info)
      return e
    case 'not_configured':
      return new AuthenticationError(e.message, info)
    default:
      return e
  }
}

export { BridgeError, SandboxError }
