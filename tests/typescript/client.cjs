// The official TypeScript SDK's client (@modelcontextprotocol/sdk, its StreamableHTTP
// transport), as an agent built on it calls tools: one session, the calls in order.
// Usage: node client.cjs '{"url": "...", "calls": [{"tool": "...", "arguments": {...}}]}'
// ("legacy": true for the HTTP+SSE transport of 2024-11-05: "url" is then the SSE endpoint)
// Prints one JSON line: the negotiated protocol version and each call's result or error.
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { SSEClientTransport } = require("@modelcontextprotocol/sdk/client/sse.js");

async function main() {
  const plan = JSON.parse(process.argv[2]);
  const client = new Client({ name: "gateway-test-ts", version: "1.0.0" });
  const options = { requestInit: { headers: plan.headers || {} } };
  const transport = plan.legacy
    ? new SSEClientTransport(new URL(plan.url), options)
    : new StreamableHTTPClientTransport(new URL(plan.url), options);
  await client.connect(transport);
  const results = [];
  for (const call of plan.calls) {
    try {
      const result = await client.callTool({ name: call.tool, arguments: call.arguments });
      results.push({ isError: Boolean(result.isError), content: result.content });
    } catch (error) {
      results.push({ error: { code: error.code, message: String(error.message), data: error.data } });
    }
  }
  const version = transport.protocolVersion || null;
  await client.close();
  process.stdout.write(JSON.stringify({ protocolVersion: version, results }) + "\n");
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
