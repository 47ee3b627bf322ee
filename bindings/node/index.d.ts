// Types of the sandbox-e2b Node package (plain ESM JavaScript, no build step).

/**
 * The deployment config: the seed plugin's, checked by the C parser (extra keys are errors).
 * A key left out is taken from its variable when set: apiKey E2B_API_KEY, template E2B_TEMPLATE,
 * apiUrl E2B_API_URL, domain E2B_DOMAIN (README "Configuration").
 */
export interface E2BDeploymentConfig {
  /** else E2B_API_KEY */
  apiKey?: string
  /** else E2B_TEMPLATE */
  template?: string
  /** else E2B_API_URL, else https://api.<domain> */
  apiUrl?: string
  /** else E2B_DOMAIN, else "e2b.app" */
  domain?: string
  /** 60..86400, default 3600 */
  timeoutSeconds?: number
  /** default true */
  domainAllowlist?: boolean
  /** default false */
  allowOpenEgress?: boolean
}

export interface Logger {
  debug?(message: string, fields?: Record<string, string>): void
  info?(message: string, fields?: Record<string, string>): void
  warn?(message: string, fields?: Record<string, string>): void
  error?(message: string, fields?: Record<string, string>): void
}

export interface TestOptions {
  /** envd address override, requests routed by the E2b-Sandbox-Id header (fake-e2b, self-hosted). */
  envdUrl?: string
  /** path of sandbox-e2b (default: SANDBOX_E2B_BIN, else sandbox-e2b on PATH) */
  bin?: string
  /** environment of the serve child (default process.env) */
  env?: NodeJS.ProcessEnv
  /** lowest library log level passed to deps.log (default 'info'; 'debug': one line per HTTP request) */
  logLevel?: 'debug' | 'info' | 'warn' | 'error'
}

export interface SandboxHandle {
  id: string
}

export interface SandboxLimits {
  cpu: number
  memoryMb: number
  diskMb: number
  egress: 'none' | 'allowlist' | 'open'
  allowHosts: readonly string[]
}

export interface ExecArgs {
  command: string
  cwd?: string
  env?: Record<string, string>
  /** ms, default 60000 (the seed's contract passes it always) */
  timeoutMs?: number
  /** bytes, stdout + stderr together, default 1048576 (1 MiB) */
  maxOutputBytes?: number
  tag?: string
  /** default: the call is not abortable */
  signal?: AbortSignal
  /** streamed stdout text as it arrives (never splits a UTF-8 character) */
  onStdout?: (data: string) => void
  onStderr?: (data: string) => void
  /** bytes (or UTF-8 text) the command reads on stdin, then EOF (default: EOF at once) */
  stdin?: Uint8Array | ArrayBuffer | string
}

export interface ExecResult {
  /** null: timed out, aborted, or killed by an unnamed signal */
  exitCode: number | null
  stdout: string
  stderr: string
  truncated: boolean
  timedOut: boolean
}

export interface FileContent {
  data: Uint8Array
  truncated: boolean
}

export interface FileStat {
  size: number
  isDir: boolean
}

export interface SandboxProvider {
  readonly concurrentExec: true
  // The seed's contract passes every argument; the runtime defaults what is optional here
  // (a signal: not abortable; limits: serve's defaults), so code written for the seed type-checks
  // unchanged and this provider is assignable to the seed's contract (test/types/check.ts).
  create(args: { name: string; limits?: Partial<SandboxLimits>; signal?: AbortSignal }): Promise<SandboxHandle>
  resume(h: SandboxHandle, signal?: AbortSignal): Promise<'resumed' | 'gone'>
  suspend(h: SandboxHandle, signal?: AbortSignal): Promise<void>
  destroy(h: SandboxHandle, signal?: AbortSignal): Promise<void>
  destroyByName(name: string, signal?: AbortSignal): Promise<void>
  killAll(h: SandboxHandle, signal?: AbortSignal): Promise<void>
  killTagged(h: SandboxHandle, tags: readonly string[], signal?: AbortSignal): Promise<void>
  exec(h: SandboxHandle, args: ExecArgs): Promise<ExecResult>
  /** maxBytes default 16777216 (16 MiB) */
  readFile(h: SandboxHandle, path: string, opts?: { maxBytes?: number; signal?: AbortSignal }): Promise<FileContent | null>
  writeFile(h: SandboxHandle, path: string, data: Uint8Array | ArrayBuffer | string, signal?: AbortSignal): Promise<void>
  stat(h: SandboxHandle, path: string, signal?: AbortSignal): Promise<FileStat | null>
  // ---- not in the contract ----
  /** Start a background command; killed when the serve child ends. */
  startCommand(h: SandboxHandle, args: StartCommandArgs): Promise<CommandHandle>
  /**
   * A running command by pid (E2B's `commands.connect`): one startCommand or exec started, one
   * another client started, or one whose stream a pause broke (after resume). wait() gets the
   * output from the attach on and the end; sendStdin needs the startCommand handle.
   */
  attach(h: SandboxHandle, pid: number, opts?: { onStdout?: (data: string) => void; onStderr?: (data: string) => void; maxOutputBytes?: number }): Promise<AttachedCommand>
  /** The sandbox's running commands. */
  processes(h: SandboxHandle, signal?: AbortSignal): Promise<ProcessInfo[]>
  /** This deployment's sandboxes (those made by create), newest first. */
  list(opts?: { name?: string; state?: 'running' | 'paused'; signal?: AbortSignal }): Promise<SandboxInfo[]>
  info(h: SandboxHandle, signal?: AbortSignal): Promise<SandboxInfo>
  /** A directory's entries, sorted by name; null when the path does not exist. */
  listDir(h: SandboxHandle, path: string, signal?: AbortSignal): Promise<{ entries: DirEntry[]; truncated: boolean } | null>
  /** End the serve child now (it also ends with Node). */
  close(): void
}

export interface StartCommandArgs {
  command: string
  cwd?: string
  env?: Record<string, string>
  timeoutMs?: number
  maxOutputBytes?: number
  tag?: string
  /** give the command a stdin pipe for sendStdin / closeStdin */
  stdin?: boolean
  onStdout?: (data: string) => void
  onStderr?: (data: string) => void
  signal?: AbortSignal
}

export interface CommandHandle {
  readonly pid: number
  /** the result once it ends (aborted: killed through kill()); a signal stops only this wait */
  wait(signal?: AbortSignal): Promise<ExecResult & { aborted: boolean }>
  sendStdin(data: Uint8Array | ArrayBuffer | string, signal?: AbortSignal): Promise<void>
  closeStdin(signal?: AbortSignal): Promise<void>
  /** kill the command and its whole tree */
  kill(signal?: AbortSignal): Promise<void>
}

export interface AttachedCommand {
  readonly pid: number
  /** the result once it ends; a signal stops only this wait */
  wait(signal?: AbortSignal): Promise<ExecResult & { aborted: boolean }>
  /** kill the command and its whole tree */
  kill(signal?: AbortSignal): Promise<void>
}

export interface ProcessInfo {
  pid: number
  tag: string | null
  /** the shell text of a command this library started, else null */
  command: string | null
  cmd: string
  args: string[]
  cwd: string | null
}

export interface SandboxInfo {
  id: string
  name: string | null
  state: 'running' | 'paused'
  templateId: string
  /** RFC 3339 UTC, or null when unknown */
  startedAt: string | null
  endAt: string | null
}

export interface DirEntry {
  name: string
  type: 'file' | 'dir' | 'symlink' | 'other'
  /** bytes */
  size: number
}

export function createE2BSandbox(
  config: E2BDeploymentConfig,
  deps?: { log?: Logger },
  testOptions?: TestOptions,
): SandboxProvider

/** A sandbox that no longer exists (the host recreates it). */
export class SandboxGoneError extends Error {
  readonly name: 'SandboxGoneError'
  readonly code: 'gone'
}

/**
 * Any other failure: code is the library's name ("invalid", "timeout", "http", "network", ...), or
 * "paused": this provider suspended the sandbox while the exec or wait ran (resume, then attach).
 */
export class SandboxError extends Error {
  readonly name: 'SandboxError'
  readonly code: string | undefined
  readonly httpStatus: number | undefined
  readonly e2bCode: string | undefined
  readonly rpcCode: number | undefined
}

/** The serve child died while the call was in flight; the next call starts a new one. */
export class BridgeError extends Error {
  readonly name: 'BridgeError'
  readonly code: 'bridge'
}

/** The low-level JSON-RPC client (bindings/protocol/methods.md). */
export class Client {
  constructor(opts?: { config?: E2BDeploymentConfig; envdUrl?: string; log?: Logger; bin?: string; env?: NodeJS.ProcessEnv; logLevel?: 'debug' | 'info' | 'warn' | 'error' })
  call(
    method: string,
    params?: Record<string, unknown>,
    opts?: { signal?: AbortSignal; onNotify?: (method: string, params: any) => void },
  ): Promise<any>
  info(): Promise<any>
  close(): void
}

/**
 * The sandbox-e2b binary: SANDBOX_E2B_BIN, else sandbox-e2b on PATH, else the engine prebuilt for
 * this platform in the package (`<root>/prebuilds/<platform>-<arch>/bin/sandbox-e2b`; root: the
 * package's directory); throws a SandboxError (code "bridge") when none.
 */
export function findBinary(env?: NodeJS.ProcessEnv, root?: string): string
