// The official TypeScript MCP SDK running the MCP authorization flow by itself, for e2e/oauth.py:
//   node e2e/ts_oauth_client.mjs <sdk-package-dir> <url> <redirect-uri>
// The SDK gets a 401 naming the resource metadata, discovers the authorization server,
// registers, and hands this script the authorization URL (its `redirectToAuthorization`); the
// script answers the provider's login and consent pages as the user `alice` would and gives
// the code back (`finishAuth`). Then it lists tools, calls identity.whoami and admin.reset (to be
// refused) and prints one JSON object.
const [sdk, url, redirect] = process.argv.slice(2);
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdk}/dist/esm/client/streamableHttp.js`);
const { UnauthorizedError } = await import(`${sdk}/dist/esm/client/auth.js`);

/** The browser: follows the provider's redirects with its cookies, fills in its forms. */
async function signIn(authorizationUrl) {
  const cookies = new Map();
  const send = async (target, init = {}) => {
    const headers = { ...(init.headers || {}) };
    if (cookies.size) headers.cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const answer = await fetch(target, { ...init, headers, redirect: 'manual' });
    for (const line of answer.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1));
    }
    return answer;
  };
  let next = authorizationUrl;
  for (let hops = 0; hops < 40; hops++) {
    const page = await send(next);
    if (page.status === 302 || page.status === 303) {
      const location = new URL(page.headers.get('location'), next).toString();
      if (location.startsWith(redirect)) {
        const code = new URL(location).searchParams.get('code');
        if (!code) throw new Error(`no code in the redirect: ${location}`);
        return code;
      }
      next = location;
      continue;
    }
    const html = await page.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html);
    if (page.status !== 200 || !action) throw new Error(`unexpected page ${page.status}: ${html.slice(0, 300)}`);
    // The form's hidden fields (which prompt it answers), and the user's login where asked.
    const form = Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (html.includes('name="login"')) Object.assign(form, { login: 'alice', password: 'any' });
    const posted = await send(new URL(action[1], next).toString(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
    if (posted.status !== 302 && posted.status !== 303) throw new Error(`form not taken: ${posted.status}`);
    next = new URL(posted.headers.get('location'), next).toString();
  }
  throw new Error('the sign-in did not come back to the client');
}

const state = {};
const provider = {
  get redirectUrl() { return redirect; },
  get clientMetadata() {
    return {
      client_name: 'ramen e2e (TypeScript)',
      redirect_uris: [redirect],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  },
  clientInformation: () => state.client,
  saveClientInformation: (info) => { state.client = info; },
  tokens: () => state.tokens,
  saveTokens: (tokens) => { state.tokens = tokens; },
  redirectToAuthorization: async (authorizationUrl) => { state.code = await signIn(authorizationUrl.toString()); },
  saveCodeVerifier: (verifier) => { state.verifier = verifier; },
  codeVerifier: () => state.verifier,
};

const connect = async () => {
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  const client = new Client({ name: 'ramen-e2e-ts-oauth', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
};

let connected;
try {
  connected = await connect();
} catch (error) {
  if (!(error instanceof UnauthorizedError) || !state.code) throw error;
  const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  await first.finishAuth(state.code);
  connected = await connect();
}
const { client, transport } = connected;
const out = { signedIn: Boolean(state.tokens?.access_token), protocolVersion: transport.protocolVersion ?? null };
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
out.whoami = JSON.parse((await client.callTool({ name: 'identity.whoami', arguments: {} })).content[0].text);
try {
  await client.callTool({ name: 'admin.reset', arguments: {} });
  out.refused = null;
} catch (e) {
  out.refused = e.code ?? String(e);
}
out.tokenSeenByTool = JSON.stringify(out.whoami).includes(state.tokens?.access_token ?? '<none>');
await transport.terminateSession();
await client.close();
console.log(JSON.stringify(out));
