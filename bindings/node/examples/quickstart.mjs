// The README's walk-through as a script, against fake-e2b (or E2B):
//
//   build/fake-e2b/fake-e2b --port 0 --api-key e2b_local_key    # prints its URL
//   SANDBOX_E2B_BIN=$PWD/build/cli/sandbox-e2b node bindings/node/examples/quickstart.mjs http://127.0.0.1:PORT
//
// Creates a sandbox, streams an exec, aborts one, writes and reads a file,
// destroys the sandbox and sees it gone. E2B_API_KEY overrides the key.
// The asserts say what each step returns; the test suite runs this file.
import assert from 'node:assert/strict'
import { createE2BSandbox, SandboxGoneError } from 'sandbox-e2b'

const url = process.argv[2]
if (!url) throw new Error('usage: node quickstart.mjs http://127.0.0.1:PORT (the URL fake-e2b printed)')
const sandbox = createE2BSandbox(
  { apiKey: process.env.E2B_API_KEY ?? 'e2b_local_key', template: 'capybara-sandbox', apiUrl: url },
  { log: console },
  { envdUrl: url }, // fake-e2b serves envd on the same port
)
const signal = AbortSignal.timeout(120_000)
const limits = { cpu: 1, memoryMb: 2048, diskMb: 10240, egress: 'none', allowHosts: [] }

const h = await sandbox.create({ name: 'quickstart-node', limits, signal })
console.log('created', h.id)

const streamed = []
const r = await sandbox.exec(h, {
  command: 'for i in 1 2 3; do echo line $i; done',
  timeoutMs: 60_000,
  maxOutputBytes: 1 << 20,
  signal,
  onStdout: (text) => {
    streamed.push(text)
    process.stdout.write(text) // as it arrives
  },
})
assert.deepEqual(r, { exitCode: 0, stdout: 'line 1\nline 2\nline 3\n', stderr: '', truncated: false, timedOut: false })
assert.equal(streamed.join(''), r.stdout)

// Abort: the call resolves with the output so far and exitCode null; the
// remote process tree is killed before it resolves.
const ac = new AbortController()
const slow = sandbox.exec(h, {
  command: 'echo started; touch /tmp/started; sleep 300',
  timeoutMs: 600_000,
  maxOutputBytes: 1024,
  signal: ac.signal,
})
while (!(await sandbox.stat(h, '/tmp/started', signal))) await new Promise((ok) => setTimeout(ok, 20))
ac.abort()
const aborted = await slow
console.log('aborted', aborted)
assert.equal(aborted.exitCode, null)
assert.equal(aborted.stdout, 'started\n')

await sandbox.writeFile(h, '/workspace/hello.txt', new TextEncoder().encode('hi\n'), signal)
const f = await sandbox.readFile(h, '/workspace/hello.txt', { maxBytes: 1024, signal })
assert.equal(new TextDecoder().decode(f.data), 'hi\n')
assert.deepEqual(await sandbox.stat(h, '/workspace/hello.txt', signal), { size: 3, isDir: false })
assert.equal(await sandbox.readFile(h, '/workspace/missing', { maxBytes: 10, signal }), null)

await sandbox.destroy(h, signal)
await assert.rejects(
  sandbox.exec(h, { command: 'true', timeoutMs: 1000, maxOutputBytes: 10, signal }),
  (e) => e instanceof SandboxGoneError && e.name === 'SandboxGoneError',
)
console.log('destroyed; exec after it is a SandboxGoneError')
