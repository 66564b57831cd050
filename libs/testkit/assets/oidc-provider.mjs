// A real OpenID provider for the tests: npm `oidc-provider` (panva's OpenID-certified
// implementation) configured as an OAuth 2.1 authorization server for MCP resources. Started by
// libs/testkit (`OidcProvider`) with one JSON argument:
//   module         path of oidc-provider's package directory
//   port           the port to listen on (127.0.0.1)
//   token_ttl      access-token lifetime in seconds
//   machine_token_ttl  the machine client's (client_credentials) tokens' lifetime; default token_ttl
//   scopes         scopes resource servers accept
//   redirect_uris  redirect URIs of the public test client
//   sso_redirect_uris  redirect URIs of the confidential `ramen` client (people signing in to
//                  ramen's console and CLI: authorization code + PKCE, client_secret_basic)
//   issuer_host    the host the issuer URL names (default 127.0.0.1; it listens on 127.0.0.1
//                  either way): `localhost` puts the provider on another site than a ramen on
//                  127.0.0.1, as a real provider is, for a browser's SameSite cookie rules
// It prints `listening <issuer>` once it serves.
import { generateKeyPairSync } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const options = JSON.parse(process.argv[2]);
const { default: Provider } = await import(pathToFileURL(join(options.module, 'lib/index.js')).href);
const port = options.port;
const issuer = `http://${options.issuer_host || '127.0.0.1'}:${port}`;
const ttl = options.token_ttl;
const machineTtl = options.machine_token_ttl || ttl;
const scopes = options.scopes;
const redirectUris = options.redirect_uris.length ? options.redirect_uris : ['http://127.0.0.1/callback'];

// A key of this run only: a token from another run (another issuer) is signed by another key.
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: `k-${port}-${Date.now()}`, alg: 'RS256', use: 'sig' };

// The test users, with the groups and roles claims rules (and SSO's group mapping) match on.
// bob's email is not verified by the provider; carol's tokens carry no groups claim at all (as
// Entra ID's past 200 groups).
const accounts = {
  alice: { sub: 'alice', name: 'Alice Example', email: 'alice@example.com', email_verified: true, groups: ['payments', 'staff'], roles: ['Payments.Viewer'] },
  bob: { sub: 'bob', name: 'Bob Example', email: 'bob@example.com', email_verified: false, groups: ['staff'], roles: [] },
  carol: { sub: 'carol', name: 'Carol Example', email: 'carol@example.com', email_verified: true },
};
const ssoRedirectUris = options.sso_redirect_uris && options.sso_redirect_uris.length ? options.sso_redirect_uris : ['http://127.0.0.1/api/auth/sso/callback'];

const provider = new Provider(issuer, {
  jwks: { keys: [jwk] },
  clients: [
    // Two confidential machine clients (client_credentials: each token's subject is the
    // client), and a public one (code + PKCE).
    { client_id: 'machine', client_secret: 'machine-secret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [], scope: scopes.join(' ') },
    { client_id: 'robot', client_secret: 'robot-secret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [], scope: scopes.join(' ') },
    { client_id: 'ramen', client_secret: 'ramen-secret', grant_types: ['authorization_code'], response_types: ['code'], redirect_uris: ssoRedirectUris, scope: 'openid profile email groups' },
    { client_id: 'public', token_endpoint_auth_method: 'none', grant_types: ['authorization_code'], response_types: ['code'], redirect_uris: redirectUris, scope: ['openid', 'profile', 'email', 'groups', ...scopes].join(' ') },
  ],
  scopes: ['openid', 'profile', 'email', 'groups', ...scopes],
  claims: { openid: ['sub'], profile: ['name'], email: ['email', 'email_verified'], groups: ['groups'] },
  pkce: { required: () => true },
  findAccount: (ctx, id) => {
    const account = accounts[id];
    return account && { accountId: id, claims: () => account };
  },
  features: {
    devInteractions: { enabled: true },
    // Open dynamic client registration (RFC 7591): MCP clients register themselves.
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource, client) => ({
        scope: scopes.join(' '),
        audience: resource,
        accessTokenTTL: client && client.clientId === 'machine' ? machineTtl : ttl,
        // A resource whose URL has `/opaque/` gets opaque tokens (RFC 7662 introspection).
        accessTokenFormat: resource.includes('/opaque/') ? 'opaque' : 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  // The user's groups travel in the access token, for rules over them.
  extraTokenClaims: async (ctx, token) => {
    const account = token.accountId && accounts[token.accountId];
    return account ? { groups: account.groups, roles: account.roles, email: account.email, name: account.name } : undefined;
  },
  ttl: { AccessToken: ttl, ClientCredentials: machineTtl },
});
provider.proxy = false;
// What went wrong, in the log the test prints when it fails.
for (const event of ['server_error', 'grant.error', 'authorization.error', 'registration_create.error', 'interaction.error']) {
  provider.on(event, (ctx, error) => console.error(`${event}: ${error && (error.stack || error.message)} ${error && error.error_description ? error.error_description : ''}`));
}
provider.listen(port, '127.0.0.1', () => console.log(`listening ${issuer}`));
