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
  startCommand(h: SandboxHandle, args: StartCommandArgs): Promise<StartedCommand>
  /**
   * A running command by pid (E2B's `commands.connect`): one startCommand or exec started, one
   * another client started, or one whose stream a pause broke (after resume). wait() gets the
   * output from the attach on and the end; sendStdin needs the startCommand handle.
   */
  attach(h: SandboxHandle, pid: number, opts?: { onStdout?: (data: string) => void; onStderr?: (data: string) => void; maxOutputBytes?: number }): Promise<AttachedCommand>
  /** The sandbox's running commands. */
  processes(h: SandboxHandle, signal?: AbortSignal): Promise<ProcessEntry[]>
  /** This deployment's sandboxes (those made by create), newest first. */
  list(opts?: { name?: string; state?: 'running' | 'paused'; signal?: AbortSignal }): Promise<ListedSandbox[]>
  info(h: SandboxHandle, signal?: AbortSignal): Promise<ListedSandbox>
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

export interface StartedCommand {
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

export interface ProcessEntry {
  pid: number
  tag: string | null
  /** the shell text of a command this library started, else null */
  command: string | null
  cmd: string
  args: string[]
  cwd: string | null
}

export interface ListedSandbox {
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
  /** 'SandboxError', or the E2B-shape subclass's name ('TimeoutError', ...) */
  readonly name: string
  readonly code: string | undefined
  readonly httpStatus: number | undefined
  /** E2B's name for httpStatus */
  readonly statusCode: number | undefined
  /** E2B's error code of the answer; for "not_configured", the refused config's reason ("config_template", ...) */
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

// ---- Sandbox: the official `e2b` SDK's shape (2.51.0), over the same engine ----------------
// bindings/MIGRATING.md: every E2B call, its counterpart here, and what differs.

/** E2B's connection options this engine takes (the rest of E2B's are not accepted). */
export interface ConnectionOpts {
  /** else E2B_API_KEY */
  apiKey?: string
  /** else E2B_DOMAIN, else "e2b.app" */
  domain?: string
  /** else E2B_API_URL, else https://api.<domain> */
  apiUrl?: string
  /** envd address override (fake-e2b, self-hosted); else E2B_SANDBOX_URL */
  sandboxUrl?: string
  /** the engine's log lines: { debug, info, warn, error } */
  logger?: Logger
  /** ms for one request (not a command's run: that is timeoutMs); a TimeoutError when it passes */
  requestTimeoutMs?: number
  signal?: AbortSignal
  /** path of sandbox-e2b (default: SANDBOX_E2B_BIN, PATH, the prebuilt engine) */
  bin?: string
}

export type RequestOpts = Pick<ConnectionOpts, 'requestTimeoutMs' | 'signal'>

export interface SandboxOpts extends ConnectionOpts {
  /** default E2B_TEMPLATE, else 'capybara-sandbox' (E2B's is 'base'); create's first argument wins */
  template?: string
  metadata?: Record<string, string>
  /** environment of every command in the sandbox */
  envs?: Record<string, string>
  /** ms, default 300000 (E2B's); 1000..86400000 */
  timeoutMs?: number
  /** default true (egress open); false: no egress */
  allowInternetAccess?: boolean
  /** only { denyOut: ['0.0.0.0/0'] } (no egress) or that with allowOut: [hosts] (an allowlist) */
  network?: { allowOut?: string[]; denyOut?: string[] }
}

export interface SandboxConnectOpts extends ConnectionOpts {
  /** ms: the lifetime each later command or file call extends the sandbox to (default 300000) */
  timeoutMs?: number
}

export type SandboxState = 'running' | 'paused'

export interface SandboxInfo {
  sandboxId: string
  templateId: string
  startedAt: Date | undefined
  endAt: Date | undefined
  state: SandboxState
}

export interface SandboxListOpts extends Omit<ConnectionOpts, 'signal'> {
  query?: {
    /** not in serve yet: a non-empty one is an InvalidArgumentError */
    metadata?: Record<string, string>
    /** default both */
    state?: SandboxState[]
    startedAfter?: Date
    /** a template ID */
    template?: string
  }
  /** default: newest first */
  order?: 'asc' | 'desc'
  /** per page, default 100 */
  limit?: number
  nextToken?: string
}

export class SandboxPaginator {
  constructor(opts?: SandboxListOpts)
  readonly hasNext: boolean
  readonly nextToken: string | undefined
  nextItems(opts?: RequestOpts): Promise<SandboxInfo[]>
}

export interface SandboxMetrics {
  timestamp: Date
  cpuUsedPct: number
  cpuCount: number
  memUsed: number
  memTotal: number
  memCache: number
  diskUsed: number
  diskTotal: number
}

export interface SandboxMetricsOpts extends RequestOpts {
  start?: Date
  end?: Date
}

export interface CommandResult {
  /** -1: killed by a signal */
  exitCode: number
  /** "exit status N" for a non-zero exit, "signal: killed" for -1, else undefined */
  error?: string
  stdout: string
  stderr: string
  /** present (true) only when maxOutputBytes cut the output */
  truncated?: true
}

export interface CommandStartOpts extends RequestOpts {
  background?: boolean
  /** default: the engine's working directory (/workspace) */
  cwd?: string
  /** 'user' (default: the engine's sandbox user) or 'root' */
  user?: 'user' | 'root'
  envs?: Record<string, string>
  onStdout?: (data: string) => void | Promise<void>
  onStderr?: (data: string) => void | Promise<void>
  /** keep stdin open for sendStdin (background only) */
  stdin?: boolean
  /** ms, default 60000; 0: none. When it passes the whole process tree is killed (TimeoutError). */
  timeoutMs?: number
  /** the engine's: bytes of stdout + stderr kept, default 67108864; cut at a UTF-8 boundary */
  maxOutputBytes?: number
  /** the engine's: a tag for commands.killTagged */
  tag?: string
}

export interface CommandConnectOpts extends RequestOpts {
  onStdout?: (data: string) => void | Promise<void>
  onStderr?: (data: string) => void | Promise<void>
  timeoutMs?: number
  maxOutputBytes?: number
}

export interface ProcessInfo {
  pid: number
  tag?: string
  cmd: string
  args: string[]
  cwd?: string
}

export class CommandHandle {
  readonly pid: number
  readonly stdout: string
  readonly stderr: string
  readonly exitCode: number | undefined
  readonly error: string | undefined
  /** a non-zero exit throws CommandExitError; after a pause (code 'paused') and a resume, call again */
  wait(): Promise<CommandResult>
  disconnect(): Promise<void>
  kill(): Promise<boolean>
  sendStdin(data: string | Uint8Array, opts?: RequestOpts): Promise<void>
  closeStdin(opts?: RequestOpts): Promise<void>
}

export interface Commands {
  run(cmd: string, opts?: CommandStartOpts & { background?: false }): Promise<CommandResult>
  run(cmd: string, opts: CommandStartOpts & { background: true }): Promise<CommandHandle>
  run(cmd: string, opts?: CommandStartOpts & { background?: boolean }): Promise<CommandHandle | CommandResult>
  list(opts?: RequestOpts): Promise<ProcessInfo[]>
  kill(pid: number, opts?: RequestOpts): Promise<boolean>
  connect(pid: number, opts?: CommandConnectOpts): Promise<CommandHandle>
  sendStdin(pid: number, data: string | Uint8Array, opts?: RequestOpts): Promise<void>
  closeStdin(pid: number, opts?: RequestOpts): Promise<void>
  /** the engine's: kill every command started with one of these tags */
  killTagged(tags: readonly string[], opts?: RequestOpts): Promise<void>
  /** the engine's: kill every command of the sandbox */
  killAll(opts?: RequestOpts): Promise<void>
}

export type FileType = 'file' | 'dir' | 'symlink'

export interface WriteInfo {
  name: string
  type?: FileType
  path: string
  metadata?: Record<string, string>
}

export interface EntryInfo extends WriteInfo {
  size: number
  mode: number
  permissions: string
  owner: string
  group: string
  modifiedTime?: Date
  symlinkTarget?: string
}

export interface FilesystemRequestOpts extends RequestOpts {
  /** 'user' (default) or 'root'; read takes 'user' only */
  user?: 'user' | 'root'
}

export interface FilesystemReadOpts extends FilesystemRequestOpts {
  /** the engine's: read at most this many bytes (default 67108864; a larger file is an error) */
  maxBytes?: number
}

export type WriteData = string | ArrayBuffer | Uint8Array | Blob | ReadableStream
export type WriteEntry = { path: string; data: WriteData }

export type FilesystemEventType = 'chmod' | 'create' | 'remove' | 'rename' | 'write'

export interface FilesystemEvent {
  /** relative to the watched directory ('sub/file' below it, with recursive) */
  name: string
  type: FilesystemEventType
}

export interface WatchOpts extends FilesystemRequestOpts {
  /** ms, default 60000; 0: none. When it passes, onExit gets a TimeoutError. */
  timeoutMs?: number
  onExit?: (err?: Error) => void | Promise<void>
  recursive?: boolean
}

export class WatchHandle {
  /** end the watch; onExit then runs without an error */
  stop(): Promise<void>
}

export interface Filesystem {
  /** resolves once the watch is live: every change from then on is reported */
  watchDir(path: string, onEvent: (event: FilesystemEvent) => void | Promise<void>, opts?: WatchOpts): Promise<WatchHandle>
  read(path: string, opts?: FilesystemReadOpts & { format?: 'text' }): Promise<string>
  read(path: string, opts: FilesystemReadOpts & { format: 'bytes' }): Promise<Uint8Array>
  read(path: string, opts: FilesystemReadOpts & { format: 'blob' }): Promise<Blob>
  read(path: string, opts: FilesystemReadOpts & { format: 'stream' }): Promise<ReadableStream<Uint8Array>>
  write(path: string, data: WriteData, opts?: FilesystemRequestOpts): Promise<WriteInfo>
  write(files: WriteEntry[], opts?: FilesystemRequestOpts): Promise<WriteInfo[]>
  writeFiles(files: WriteEntry[], opts?: FilesystemRequestOpts): Promise<WriteInfo[]>
  list(path: string, opts?: FilesystemRequestOpts & { depth?: number }): Promise<EntryInfo[]>
  exists(path: string, opts?: FilesystemRequestOpts): Promise<boolean>
  getInfo(path: string, opts?: FilesystemRequestOpts): Promise<EntryInfo>
  makeDir(path: string, opts?: FilesystemRequestOpts): Promise<boolean>
  rename(oldPath: string, newPath: string, opts?: FilesystemRequestOpts): Promise<EntryInfo>
  remove(path: string, opts?: FilesystemRequestOpts): Promise<void>
}

export interface PtyCreateOpts extends RequestOpts {
  cols: number
  rows: number
  onData: (data: Uint8Array) => void | Promise<void>
  /** ms, default 60000; 0: none */
  timeoutMs?: number
  user?: 'user' | 'root'
  /** TERM, LANG, LC_ALL default as in E2B (xterm-256color, C.UTF-8) */
  envs?: Record<string, string>
  cwd?: string
}

/** A terminal: wait() resolves its end (a non-zero one is a CommandExitError); stdout/stderr stay ''. */
export class PtyHandle {
  readonly pid: number
  readonly stdout: string
  readonly stderr: string
  readonly exitCode: number | undefined
  readonly error: string | undefined
  wait(): Promise<CommandResult>
  kill(): Promise<boolean>
  disconnect(): Promise<void>
}

export interface Pty {
  create(opts: PtyCreateOpts): Promise<PtyHandle>
  connect(pid: number, opts?: RequestOpts & { onData?: (data: Uint8Array) => void | Promise<void> }): Promise<PtyHandle>
  sendInput(pid: number, data: Uint8Array, opts?: RequestOpts): Promise<void>
  resize(pid: number, size: { cols: number; rows: number }, opts?: RequestOpts): Promise<void>
  /** true: killed; false: this process holds no such terminal */
  kill(pid: number, opts?: RequestOpts): Promise<boolean>
}

export class Sandbox {
  /** @hidden use Sandbox.create or Sandbox.connect */
  constructor(opts: never)
  readonly sandboxId: string
  readonly sandboxDomain: string
  readonly commands: Commands
  readonly files: Filesystem
  readonly pty: Pty
  static create<S extends typeof Sandbox>(this: S, opts?: SandboxOpts): Promise<InstanceType<S>>
  static create<S extends typeof Sandbox>(this: S, template: string, opts?: SandboxOpts): Promise<InstanceType<S>>
  static connect<S extends typeof Sandbox>(this: S, sandboxId: string, opts?: SandboxConnectOpts): Promise<InstanceType<S>>
  static list(opts?: SandboxListOpts): SandboxPaginator
  static kill(sandboxId: string, opts?: ConnectionOpts): Promise<boolean>
  static getInfo(sandboxId: string, opts?: ConnectionOpts): Promise<SandboxInfo>
  static setTimeout(sandboxId: string, timeoutMs: number, opts?: ConnectionOpts): Promise<void>
  static pause(sandboxId: string, opts?: ConnectionOpts): Promise<boolean>
  static getMetrics(sandboxId: string, opts?: ConnectionOpts & SandboxMetricsOpts): Promise<SandboxMetrics[]>
  connect(opts?: RequestOpts): Promise<this>
  kill(opts?: RequestOpts): Promise<boolean>
  /** true: paused now; false: it was paused already */
  pause(opts?: RequestOpts): Promise<boolean>
  setTimeout(timeoutMs: number, opts?: RequestOpts): Promise<void>
  getInfo(opts?: RequestOpts): Promise<SandboxInfo>
  getMetrics(opts?: SandboxMetricsOpts): Promise<SandboxMetrics[]>
  isRunning(opts?: RequestOpts): Promise<boolean>
  /** `${port}-${sandboxId}.${domain}`, no request (as E2B's) */
  getHost(port: number): string
  /** the engine's: serve's `host` (the URL, and the traffic token when traffic is not public) */
  getHostInfo(port: number, opts?: RequestOpts): Promise<{ url: string; hostname: string; port: number; trafficToken?: string }>
}
export default Sandbox

/** End every serve child the Sandbox shape started (they also end with Node). */
export function closeAll(): void

export class TimeoutError extends SandboxError {}
export class InvalidArgumentError extends SandboxError {}
export class NotEnoughSpaceError extends SandboxError {}
export class NotFoundError extends SandboxError {}
export class FileNotFoundError extends NotFoundError {}
export class SandboxNotFoundError extends NotFoundError {}
export class RateLimitError extends SandboxError {}
/** As in E2B, not a SandboxError. */
export class AuthenticationError extends Error {
  readonly code: string | undefined
  readonly statusCode: number | undefined
}
export class CommandExitError extends SandboxError implements CommandResult {
  constructor(result: CommandResult)
  readonly exitCode: number
  readonly error: string | undefined
  readonly stdout: string
  readonly stderr: string
}
