// Peer test: fake-e2b's templates through the official e2b SDK (pinned in package.json).
// `base` must look like E2B's base template; `capybara-sandbox` keeps the seed's image
// conventions (docs/contract.md "The template"; templates/capybara-sandbox/Dockerfile). Also: a cold boot gets a new boot id.
//
// Run: FAKE_E2B=/path/to/fake-e2b node --test templates.test.mjs   (or tests/peer/run.sh)
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, SandboxError } from 'e2b'
import { fakePath, startFake } from './fake.mjs'

const T = { timeout: 120000 }
let fake
const created = []

async function create(template, opts = {}) {
  const sbx = await Sandbox.create(template, opts)
  created.push(sbx.sandboxId)
  return sbx
}

before(async () => {
  fake = await startFake(fakePath())
})

after(async () => {
  for (const id of created) await Sandbox.kill(id).catch(() => {})
  if (fake) await fake.stop()
})

describe('templates', { concurrency: false }, () => {
  test('base: user `user` (1000), HOME and cwd /home/user, sudo without a password, python3', T, async () => {
    const sbx = await create('base')
    const r = await sbx.commands.run('id -un; id -u; id -g; echo $HOME; pwd')
    assert.equal(r.stdout, 'user\n1000\n1000\n/home/user\n/home/user\n')
    assert.equal((await sbx.commands.run('sudo -n id -un')).stdout, 'root\n')
    assert.match((await sbx.commands.run('python3 -c "print(6*7)"')).stdout, /^42\n$/)
    assert.match((await sbx.commands.run('python -c "print(6*7)"')).stdout, /^42\n$/) // as E2B's base
    // relative file paths resolve against the user's home, owned by the user
    await sbx.files.write('hello.txt', 'hi')
    const info = await sbx.files.getInfo('hello.txt')
    assert.equal(info.path, '/home/user/hello.txt')
    assert.equal(info.owner, 'user')
    // root keeps its own HOME; the template's workdir is everyone's default cwd (envd)
    const root = await sbx.commands.run('echo $HOME; pwd', { user: 'root' })
    assert.equal(root.stdout, '/root\n/home/user\n')
  })

  test('capybara-sandbox: user `sandbox` (1000), /workspace, /skills and /opt/capybara', T, async () => {
    const sbx = await create('capybara-sandbox')
    const r = await sbx.commands.run('id -un; id -u; echo $HOME; pwd')
    assert.equal(r.stdout, 'sandbox\n1000\n/workspace\n/workspace\n')
    const dirs = await sbx.commands.run("stat -c '%a %U %n' /workspace /skills /opt/capybara", {
      user: 'root',
    })
    assert.equal(dirs.stdout, '755 sandbox /workspace\n755 root /skills\n700 root /opt/capybara\n')
    await assert.rejects(sbx.commands.run('sudo -n true'))
    assert.equal(await sbx.files.exists('/home/user'), false)
  })

  test('an unknown template is a 404, as on E2B', T, async () => {
    await assert.rejects(Sandbox.create('no-such-template'), (e) => {
      assert.ok(e instanceof SandboxError, `got ${e?.constructor?.name}`)
      assert.match(e.message, /404: template 'no-such-template' not found/)
      return true
    })
  })

  test('boot id: kept by a resume from memory, new after a cold boot', T, async () => {
    const sbx = await create('base')
    const bootId = async (s) => (await s.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout.trim()
    const first = await bootId(sbx)
    assert.match(first, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    await sbx.pause()
    const warm = await Sandbox.connect(sbx.sandboxId)
    assert.equal(await bootId(warm), first)
    await warm.pause({ keepMemory: false })
    const cold = await Sandbox.connect(sbx.sandboxId)
    const second = await bootId(cold)
    assert.notEqual(second, first)
    // another sandbox boots with its own id
    const other = await create('base')
    assert.notEqual(await bootId(other), second)
  })
})
