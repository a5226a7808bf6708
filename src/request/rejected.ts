// Thrown by explain for a request the proxy answers with 400 itself: there is no route to
// explain, and saying "404" would describe a different request.
export class RejectedRequest extends Error {
  constructor(readonly part: "host" | "path") {
    super(`the proxy answers 400 to this request: invalid ${part}`);
    this.name = "RejectedRequest";
  }
}
