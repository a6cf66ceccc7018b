// The official TypeScript MCP client against a running Memory Bank, driven by
// tests/test_mcp_ts_sdk.py. It lists the tools first, so the SDK caches each tool's
// outputSchema and checks every structured result against it, as agents' hosts do.
//
// Usage: node mcp_ts_client.cjs <mcp url> <bearer token> '<JSON list of {name, arguments}>'
// Prints one JSON object: {"tools": [names], "calls": [{"result": ...} | {"thrown": {code, message}}]},
// or {"listThrown": {code, message}, "calls": []} when the listing itself is refused.
// A call whose result the SDK rejects (e.g. structured content that breaks the schema)
// shows up as "thrown", which is what the agent would meet.
"use strict";

const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

function thrown(error) {
  return { code: error.code ?? null, message: String(error.message ?? error) };
}

async function main() {
  const [url, token, callsJson] = process.argv.slice(2);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "memory-bank-ts-test", version: "1.0.0" });
  await client.connect(transport);
  let listed;
  try {
    listed = await client.listTools();
  } catch (error) {
    process.stdout.write(JSON.stringify({ listThrown: thrown(error), calls: [] }) + "\n");
    await client.close();
    return;
  }
  const calls = [];
  for (const call of JSON.parse(callsJson)) {
    try {
      calls.push({ result: await client.callTool({ name: call.name, arguments: call.arguments }) });
    } catch (error) {
      calls.push({ thrown: thrown(error) });
    }
  }
  process.stdout.write(JSON.stringify({ tools: listed.tools.map((tool) => tool.name), calls }) + "\n");
  await client.close();
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
