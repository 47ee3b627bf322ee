// The host glue: the plugin entry named by .capybara-plugin/plugin.json, so a
// host that loads the seed plugin (@capybara-hq/plugin-sandbox-e2b) can load
// this one instead. It is the only file that imports the platform's SDK and
// zod (both provided by the host, not dependencies of this package); the
// provider itself (createE2BSandbox) is tested directly. The deployment
// schema is the seed's; the C parser checks the config again with the same
// verdicts.
import { defineExtension, SANDBOX_EXTENSION_POINT, secret, ui } from '@capybara-hq/plugin-sdk'
import { z } from 'zod'
import { createE2BSandbox } from './provider.js'

const HOSTNAME_RE = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/

export const DeploymentConfig = z
  .object({
    apiKey: ui(secret(z.string().min(1)), { label: { zh: 'API 密钥', en: 'API key' } }),
    apiUrl: ui(z.url({ protocol: /^https?$/ }).optional(), { label: { zh: '接口地址', en: 'API URL' } }),
    domain: ui(
      z.string().regex(HOSTNAME_RE, { message: 'domain must be a lowercase hostname such as e2b.app' }).default('e2b.app'),
      { label: { zh: '沙箱域名', en: 'Sandbox domain' } },
    ),
    template: ui(z.string().min(1), { label: { zh: '模板', en: 'Template' } }),
    timeoutSeconds: ui(z.number().int().min(60).max(86400).default(3600), {
      label: { zh: '沙箱超时', en: 'Sandbox timeout' },
    }),
    domainAllowlist: ui(z.boolean().default(true), { label: { zh: '按域名出站白名单', en: 'Domain egress allowlist' } }),
    allowOpenEgress: ui(z.boolean().default(false), { label: { zh: '允许开放出站', en: 'Allow open egress' } }),
  })
  .strict()

export default defineExtension({
  name: 'sandbox-e2b',
  version: '0.1.0',
  sdk: '^0.1.0-rc.0',
  provides: [SANDBOX_EXTENSION_POINT],
  permissions: {},
  config: { deployment: DeploymentConfig },
  setup(ctx) {
    ctx.provide(SANDBOX_EXTENSION_POINT, createE2BSandbox(ctx.config, { log: ctx.log }))
  },
})
