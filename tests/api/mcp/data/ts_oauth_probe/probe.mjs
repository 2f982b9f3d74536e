// The TypeScript MCP SDK (the version package.json pins) signing in to Atrium with OAuth, as a CLI client does:
// StreamableHTTPClientTransport with an OAuthClientProvider, a loopback listener for the redirect back, discovery
// from the 401, dynamic registration, PKCE, the code exchange; then initialize, tools/list, memory_save and
// memory_search as the person who approved it.
//
//   node probe.mjs MCP_URL CONTENT QUERY
//
// stdout carries one JSON object a line: {"event":"authorize","url":...} when the person must approve (whoever
// runs this opens that URL, signs in and approves; the browser is then sent to the loopback listener), then
// {"event":"result",...} with what the server answered. Run by tests/api/mcp/test_oauth_ts_probe.py.

import { randomBytes } from "node:crypto";
import http from "node:http";

import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mcpUrl, content, query] = process.argv.slice(2);
if (!mcpUrl || !content || !query) {
  console.error("usage: node probe.mjs MCP_URL CONTENT QUERY");
  process.exit(2);
}
const say = (event, data = {}) => process.stdout.write(JSON.stringify({ event, ...data }) + "\n");
const within = (promise, ms, what) =>
  Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms))]);

// The loopback listener the authorization server sends the browser back to (RFC 8252 §7.3).
let callback;
const arrived = new Promise((resolve, reject) => (callback = { resolve, reject }));
const listener = http.createServer((req, res) => {
  const url = new URL(req.url, "http://127.0.0.1");
  if (url.pathname !== "/callback") {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { "content-type": "text/plain" }).end("Signed in. You can close this window.");
  const code = url.searchParams.get("code");
  if (code) callback.resolve({ code, state: url.searchParams.get("state") });
  else callback.reject(new Error(`authorization refused: ${url.searchParams.get("error")}`));
});
await new Promise((resolve) => listener.listen(0, "127.0.0.1", resolve));
const redirectUrl = `http://127.0.0.1:${listener.address().port}/callback`;

/** Everything the SDK asks a client to keep, kept in memory for this one run. */
class MemoryProvider {
  constructor(redirect) {
    this.redirect = redirect;
    this.sentState = randomBytes(16).toString("hex");
    this.client = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.asked = 0;
  }
  get redirectUrl() {
    return this.redirect;
  }
  get clientMetadata() {
    return {
      client_name: "Atrium TypeScript SDK probe",
      redirect_uris: [this.redirect],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state() {
    return this.sentState;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url) {
    this.asked += 1;
    say("authorize", { url: url.toString() });
  }
  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }
  codeVerifier() {
    if (!this.verifier) throw new Error("no PKCE verifier saved");
    return this.verifier;
  }
}

const provider = new MemoryProvider(redirectUrl);
const newClient = () => new Client({ name: "atrium-ts-oauth-probe", version: "1.0.0" });
const newTransport = () => new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });

let client = newClient();
try {
  await client.connect(newTransport());
  throw new Error("the server let an unauthenticated client in");
} catch (error) {
  if (!(error instanceof UnauthorizedError)) throw error;
}
const { code, state } = await within(arrived, 120_000, "the person's approval");
if (state !== provider.sentState) throw new Error("the state that came back is not the one sent");
await newTransport().finishAuth(code); // the code exchange (PKCE verifier, resource)

client = newClient();
await client.connect(newTransport());
const serverInfo = client.getServerVersion();
const tools = (await client.listTools()).tools.map((t) => t.name);
const saved = await client.callTool({ name: "memory_save", arguments: { content, kind: "fact" } });
const found = await client.callTool({ name: "memory_search", arguments: { query } });
say("result", {
  serverInfo,
  protocolVersion: client.transport?.protocolVersion ?? null,
  tools,
  saved: { isError: Boolean(saved.isError), structuredContent: saved.structuredContent ?? null },
  found: { isError: Boolean(found.isError), structuredContent: found.structuredContent ?? null },
  registeredClientId: provider.client?.client_id ?? null,
  asked: provider.asked,
  tokenType: provider.saved?.token_type ?? null,
});
await client.close();
listener.close();
process.exit(0);
