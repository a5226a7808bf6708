// A gRPC client that leaves after its request was wholly sent (grpc-js `call.cancel()`: an
// RST_STREAM CANCEL after the DATA frame that ended the stream, while the pod is still working)
// is the client closing, not a malformed request: nginx records 499 for a client that closed
// the connection before the answer (NGX_HTTP_CLIENT_CLOSED_REQUEST, src/http/ngx_http_request.h;
// set by ngx_http_upstream_check_broken_connection in src/http/ngx_http_upstream.c).
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as grpc from "@grpc/grpc-js";
import { makeBackend, makeTable } from "../proxy/helpers.ts";
import { startTlsProxy, type TlsProxy } from "../http2/helpers.ts";
import { echoClient, startEchoServer, type EchoServer } from "./server.ts";
import { eventually } from "../wait.ts";

// biome-ignore lint: grpc-js clients are typed at run time.
type Any = any;

let pod: EchoServer;
let proxy: TlsProxy;

beforeAll(async () => {
  pod = await startEchoServer(undefined, "slow");
  // The HTTPS port as serveTraffic runs it: a gRPC route puts it on node:http2 (serving/https.ts).
  proxy = startTlsProxy(makeTable([{ host: "slow.test", backend: makeBackend([pod.port], { scheme: "grpc" }) }]), { kind: "serving" });
});
afterAll(async () => {
  await proxy.stop();
  await pod.stop();
});

const records = () => proxy.records.filter((r) => r.host === "slow.test");

/** One unary call the pod answers only after 2 s (a slow pod is what is under test), cancelled by `cancel`. */
async function cancelledCall(c: Any, cancel: (call: Any) => void | Promise<void>): Promise<void> {
  let status: grpc.StatusObject | null = null;
  const call = c.Unary({ text: "x", delayMs: 2_000 }, () => {});
  call.on("status", (s: grpc.StatusObject) => (status = s));
  await cancel(call);
  await eventually(() => status !== null, 5_000, "the client's own status");
  expect(status!.code).toBe(grpc.status.CANCELLED);
}

test("calls cancelled right after they were sent, and while the pod works, are each logged as the client closing (499)", async () => {
  const c = echoClient(proxy.port, "slow.test");
  await new Promise<void>((r, j) => c.waitForReady(Date.now() + 5_000, (e: Error | undefined) => (e ? j(e) : r())));
  const before = records().length;
  // Cancelled one turn after the call started: grpc-js has written HEADERS and the DATA with
  // END_STREAM, so the reset reaches Portico just after the request body's end (today's main
  // logged these 400 BadFraming: its one-turn check after a body's end took the abort for
  // Bun.serve refusing a chunked tail).
  const quick = 5;
  for (let i = 0; i < quick; i++) await cancelledCall(c, (call) => void setImmediate(() => call.cancel()));
  // Cancelled once the pod has the call.
  await cancelledCall(c, async (call) => {
    const seen = pod.seen.length;
    await eventually(() => pod.seen.length > seen, 5_000, "the call at the pod");
    call.cancel();
  });
  await eventually(() => records().length === before + quick + 1, 5_000, "an access record per call");
  expect(records().slice(before).map((r) => [r.status, r.error, r.protocol])).toEqual(
    Array.from({ length: quick + 1 }, () => [499, "ClientClosed", "h2"]),
  );
  c.close();
});
