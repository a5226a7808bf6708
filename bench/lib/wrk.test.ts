import { expect, test } from "bun:test";
import { parseDuration, parseWrk } from "./wrk.ts";

const SAMPLE = `Running 5s test @ http://127.0.0.1:8080/
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.02ms  200.00us   5.00ms   90.00%
    Req/Sec    60.00k     2.00k   65.00k    80.00%
  Latency Distribution
     50%  850.00us
     75%    1.10ms
     90%    1.20ms
     99%    2.50ms
  300000 requests in 5.00s, 40.00MB read
  Socket errors: connect 0, read 3, write 0, timeout 1
  Non-2xx or 3xx responses: 12
Requests/sec:  60000.12
Transfer/sec:      8.00MB
`;

test("parses rps, percentiles and errors", () => {
  const r = parseWrk(SAMPLE);
  expect(r.rps).toBeCloseTo(60000.12);
  expect(r.p50).toBeCloseTo(0.85);
  expect(r.p99).toBeCloseTo(2.5);
  expect(r.requests).toBe(300000);
  expect(r.non2xx).toBe(12);
  expect(r.errors).toBe(16);
});

test("durations in every wrk unit", () => {
  expect(parseDuration("12.00us")).toBeCloseTo(0.012);
  expect(parseDuration("1.50s")).toBe(1500);
  expect(() => parseDuration("abc")).toThrow();
});

test("missing summary is an error, not a zero", () => {
  expect(() => parseWrk("unable to connect to 127.0.0.1:1 Connection refused")).toThrow();
});
