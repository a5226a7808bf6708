// Trailer fields (RFC 9110 §6.5) beside a web Response, which has no place for them. gRPC puts
// its status there (grpc-status, grpc-message), so a gRPC upstream's trailers travel from the
// forwarder (grpc.ts) through relayResponse to the HTTP/2 listener, which sends them after
// the body. A listener that cannot send trailers (Bun.serve, HTTP/1.1) never asks.

export interface TrailerBox {
  /** Settles when the upstream body has ended, with its trailers (null: it sent none). */
  readonly ready: Promise<Headers | null>;
  /** The trailers once settled; undefined while the body still runs. */
  readonly value: Headers | null | undefined;
}

export interface TrailerSink extends TrailerBox {
  /** First call wins. */
  settle(h: Headers | null): void;
}

const boxes = new WeakMap<Response, TrailerBox>();

export function createTrailerSink(): TrailerSink {
  let settle!: (h: Headers | null) => void;
  const ready = new Promise<Headers | null>((r) => (settle = r));
  const sink = {
    ready,
    value: undefined as Headers | null | undefined,
    settle(h: Headers | null) {
      if (sink.value !== undefined) return;
      sink.value = h;
      settle(h);
    },
  };
  return sink;
}

export function attachTrailers(res: Response, box: TrailerBox): Response {
  boxes.set(res, box);
  return res;
}

export function trailersOf(res: Response): TrailerBox | undefined {
  return boxes.get(res);
}

/** `to` (a Response rebuilt from `from`'s body) carries `from`'s trailers too. */
export function carryTrailers(from: Response, to: Response): Response {
  const box = boxes.get(from);
  if (box !== undefined) boxes.set(to, box);
  return to;
}
