import { expect, test } from "bun:test";
import { parseH2load } from "./h2load.ts";

// Shaped on the gRPC cell through Portico in which `done - 2xx` said 5 non-2xx answers:
// h2load's --log-file showed those 5 streams with status 0 (headers received in the warm-up,
// closed after it) and Portico's access log had no answer but 200 / grpc-status 0.
const WARMUP_SPILL = `finished in 3.00s, 7611.00 req/s, 608.91KB/s
requests: 22834 total, 22898 started, 22834 done, 22834 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 22829 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 1.78MB (1868014) total, 334.46KB (342487) headers (space savings 91.02%), 401.27KB (410901) data
`;

test("streams whose status came during the warm-up are not non-2xx answers", () => {
  const r = parseH2load(WARMUP_SPILL);
  expect(r.done).toBe(22834);
  expect(r.status2xx).toBe(22829);
  expect(r.non2xx).toBe(0);
  expect(r.statusInWarmUp).toBe(5);
  expect(r.rps).toBe(7611);
  expect(r.mbps).toBeCloseTo(0.60891, 5);
});

test("3xx, 4xx and 5xx are counted as non-2xx", () => {
  const r = parseH2load(`finished in 10.00s, 100.00 req/s, 1.00MB/s
requests: 1000 total, 1000 started, 1000 done, 991 succeeded, 9 failed, 0 errored, 0 timeout
status codes: 990 2xx, 1 3xx, 4 4xx, 5 5xx
`);
  expect(r.status2xx).toBe(990);
  expect(r.non2xx).toBe(10);
  expect(r.statusInWarmUp).toBe(0);
  expect(r.failed).toBe(9);
});

test("an output without the status line is refused, not read as zero answers", () => {
  expect(() => parseH2load("finished in 1.00s, 1.00 req/s, 1.00MB/s\nrequests: 1 total, 1 started, 1 done, 1 succeeded, 0 failed, 0 errored, 0 timeout\n")).toThrow(/unreadable/);
});
