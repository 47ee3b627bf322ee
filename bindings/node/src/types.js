// Shapes: the provider's (the seed's camelCase) to and from serve's (the C
// API's snake_case, bytes as "key" or "key_b64").

// A byte field of a serve result as a Buffer (exact bytes).
export function bytesOf(obj, key) {
  if (typeof obj[`${key}_b64`] === 'string') return Buffer.from(obj[`${key}_b64`], 'base64')
  return Buffer.from(obj[key] ?? '', 'utf8')
}

// A byte field as text: valid UTF-8 as is, anything else decoded with U+FFFD (as the seed does).
export function textOf(obj, key) {
  if (typeof obj[`${key}_b64`] === 'string') return Buffer.from(obj[`${key}_b64`], 'base64').toString('utf8')
  return obj[key] ?? ''
}

export function limitsToWire(l) {
  if (l === undefined || l === null) return undefined
  const w = {
    cpu: l.cpu,
    memory_mb: l.memoryMb,
    disk_mb: l.diskMb,
    egress: l.egress,
    allow_hosts: l.allowHosts === undefined ? undefined : [...l.allowHosts],
  }
  for (const k of Object.keys(w)) if (w[k] === undefined) delete w[k]
  return w
}

// write_file's data: a string is sent as text, bytes as base64.
export function dataToWire(data) {
  if (typeof data === 'string') return { data }
  if (data instanceof Uint8Array) return { data_b64: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64') }
  if (data instanceof ArrayBuffer) return { data_b64: Buffer.from(data).toString('base64') }
  throw new TypeError('writeFile data must be a Uint8Array, a Buffer, an ArrayBuffer or a string')
}

export function execResultOf(r) {
  return {
    exitCode: r.exit_code,
    stdout: textOf(r, 'stdout'),
    stderr: textOf(r, 'stderr'),
    truncated: r.truncated,
    timedOut: r.timed_out,
  }
}
