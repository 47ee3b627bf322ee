// Peer test: Sandbox.updateNetwork (PUT /sandboxes/{id}/network) through the official e2b SDK
// changes what a running sandbox may reach at once, both ways, and a sandbox created without
// internet access is let out by one. Seen through the sandbox's DNS, which its egress proxy
// answers under the current rules (names from --egress-host: nothing leaves the machine).
// Needs root and BPF sk_lookup (a sandbox network of its own); skips otherwise.
//
// Run: FAKE_E2B=/path/to/fake-e2b node --test network.test.mjs   (or tests/peer/run.sh)
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { ALL_TRAFFIC, Sandbox } from 'e2b'
import { fakePath, startFake } from './fake.mjs'

const T = { timeout: 120000 }
let fake
let own = false // sandboxes get a network of their own (the proxy answers their DNS)
const made = []

async function create(opts = {}) {
  const s = await Sandbox.create('base', opts)
  made.push(s)
  return s
}

// What the sandbox's DNS says of `name`: its first IPv4 address, or "nxdomain".
async function lookup(sbx, name) {
  const r = await sbx.commands.run(
    `getent ahostsv4 ${name} | awk 'NR==1{print $1}' | grep . || echo nxdomain`,
  )
  return r.stdout.trim()
}

before(async () => {
  fake = await startFake(fakePath(), {
    args: ['--egress-host', 'allowed.test=198.18.0.77', '--egress-host', 'other.test=198.18.0.78'],
  })
  if (process.getuid?.() === 0) {
    const probe = await create()
    const r = await probe.commands.run("grep -c 'egress proxy' /etc/resolv.conf || true")
    own = r.stdout.trim() === '1'
  }
})

after(async () => {
  await Promise.all(made.map((s) => s.kill().catch(() => {})))
  if (fake) await fake.stop()
})

describe('network update is live', { concurrency: false }, () => {
  test('an allowlist sandbox opened, then closed, by updateNetwork', T, async (t) => {
    if (!own) return t.skip('no sandbox network of its own (root and BPF sk_lookup)')
    const sbx = await create({ network: { allowOut: ['allowed.test'], denyOut: [ALL_TRAFFIC] } })
    assert.equal(await lookup(sbx, 'allowed.test'), '198.18.0.77')
    assert.equal(await lookup(sbx, 'other.test'), 'nxdomain')

    await sbx.updateNetwork({}) // every egress rule cleared: open
    assert.equal(await lookup(sbx, 'other.test'), '198.18.0.78')

    await sbx.updateNetwork({ allowInternetAccess: false })
    assert.equal(await lookup(sbx, 'other.test'), 'nxdomain')
    assert.equal(await lookup(sbx, 'allowed.test'), 'nxdomain')

    await sbx.updateNetwork({ allowOut: ['allowed.test'], denyOut: [ALL_TRAFFIC] })
    assert.equal(await lookup(sbx, 'allowed.test'), '198.18.0.77')
    assert.equal(await lookup(sbx, 'other.test'), 'nxdomain')
  })

  test('a sandbox created without internet access is let out, and keeps it after pause', T, async (t) => {
    if (!own) return t.skip('no sandbox network of its own (root and BPF sk_lookup)')
    const sbx = await create({ allowInternetAccess: false })
    const addrs = await sbx.commands.run("ip -4 -o addr show | awk '{print $4}'")
    assert.equal(addrs.stdout, '127.0.0.1/8\n')
    await sbx.updateNetwork({ allowInternetAccess: true })
    assert.equal(await lookup(sbx, 'other.test'), '198.18.0.78')
    await sbx.pause()
    await sbx.connect()
    assert.equal(await lookup(sbx, 'other.test'), '198.18.0.78')
  })
})
