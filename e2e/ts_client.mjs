// The official TypeScript MCP SDK as a user's client, for e2e/scenario.py:
//   node e2e/ts_client.mjs <sdk-package-dir> <url> <key> [tool-to-call-and-expect-refused]
// Connects over streamable HTTP (Authorization: Bearer <key>), lists tools, calls notes.add,
// then either weather.survey (with progress) or, when given, a tool expected to be refused;
// ends its session (DELETE) and prints one JSON object.
const [sdk, url, key, refusedTool] = process.argv.slice(2);
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdk}/dist/esm/client/streamableHttp.js`);

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: "ramen-e2e-ts", version: "1.0.0" });
await client.connect(transport);
const out = {
  protocolVersion: transport.protocolVersion ?? null,
  sessionId: transport.sessionId ?? null,
  server: client.getServerVersion()?.name ?? null,
};
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
out.add = (await client.callTool({ name: "notes.add", arguments: { a: 2, b: 3 } })).structuredContent;
if (!refusedTool) {
  const progress = [];
  const survey = await client.callTool(
    { name: "weather.survey", arguments: { city: "Lima", steps: 2 } },
    undefined,
    { onprogress: (p) => progress.push(p.progress) },
  );
  out.survey = survey.content?.[0]?.text ?? null;
  out.progress = progress;
} else {
  try {
    await client.callTool({ name: refusedTool, arguments: {} });
    out.refused = null;
  } catch (e) {
    out.refused = e.code ?? String(e);
  }
}
await transport.terminateSession();
await client.close();
console.log(JSON.stringify(out));
