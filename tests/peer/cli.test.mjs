// The official e2b CLI (npm @e2b/cli, pinned in package.json) against fake-e2b: its
// `sandbox logs` prints a sandbox's lines as E2B's store holds them (fake-e2b/README.md,
// Control plane, GET /v2/sandboxes/{id}/logs), read after the sandbox was killed.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Sandbox } from 'e2b'
import { startFake } from './fake.mjs'

const run = promisify(execFile)
const CLI = fileURLToPath(new URL('./node_modules/@e2b/cli/dist/index.js', import.meta.url))

test('e2b sandbox logs --format json: lifecycle and process lines', { timeout: 120000 }, async (t) => {
  const fake = await startFake(process.env.FAKE_E2B)
  t.after(() => fake.stop())
  const sbx = await Sandbox.create('base')
  const id = sbx.sandboxId
  await sbx.commands.run('echo hi')
  assert.equal(await sbx.pause(), true)
  await Sandbox.connect(id)
  await sbx.kill()

  const env = { ...process.env, NO_UPDATE_NOTIFIER: '1', NO_COLOR: '1' }
  const { stdout } = await run(process.execPath, [CLI, 'sandbox', 'logs', id, '--format', 'json', '--level', 'DEBUG'], { env })
  const lines = stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
  const pid = /^Process with pid (\d+) started$/.exec(lines[2]?.message ?? '')?.[1]
  assert.ok(pid, `no process start line: ${stdout}`)
  assert.deepEqual(lines.map((l) => l.message), [
    'Started creating sandbox',
    'Sandbox created',
    `Process with pid ${pid} started`,
    `Process with pid ${pid} ended`,
    'Pausing sandbox',
    'Sandbox stopped',
    'Started resuming sandbox',
    'Sandbox created',
    'Killing sandbox',
    'Sandbox stopped',
  ])
  assert.deepEqual(lines.map((l) => l.level), ['debug', 'info', 'info', 'info', 'info', 'info', 'debug', 'info', 'info', 'info'])
  // the CLI prints the stored line less the keys it deletes (instanceID, teamID, service,
  // envID, sandboxID, source_type, ...): numbers and objects as the line has them
  const { timestamp, ...start } = lines[2]
  assert.ok(!Number.isNaN(Date.parse(timestamp)))
  assert.deepEqual(start, {
    level: 'info',
    buildID: 'unknown',
    category: 'default',
    command: '/bin/bash -l -c echo hi',
    event_type: 'process_start',
    logger: '',
    message: `Process with pid ${pid} started`,
    pid: Number(pid),
    request_timeout_ms: 60000, // commands.run's default timeoutMs, as Connect-Timeout-Ms
  })
  assert.deepEqual(lines[3].process_result, { exited: true, status: 'exit status 0' })
  assert.equal(lines[3].stdout_bytes, 3)
  assert.equal(lines[8].kill_reason, 'request')
  assert.equal(lines[8].logger, 'orchestrator')

  // --loggers keeps the lines whose logger starts so; the pretty format prints each
  const { stdout: orch } = await run(process.execPath, [CLI, 'sandbox', 'logs', id, '--loggers', 'orchestrator'], { env })
  // (util.inspect colours the values whatever the terminal)
  const printed = orch
    .replace(/\x1b\[[0-9;]*m/g, '')
    .split('\n')
    .filter((l) => l.startsWith('['))
  assert.equal(printed.length, 4, orch)
  assert.match(printed[0], /INFO .*message: 'Pausing sandbox'/)
  assert.match(printed[2], /kill_reason: 'request'.*message: 'Killing sandbox'/)
})
